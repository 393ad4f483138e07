"""Result tables and run summaries."""

from .finished import NOTHING_SCORED, Finished, dropped_rows
from .phases import Phases
from .tables import command_line, markdown_table, write_results

__all__ = ["NOTHING_SCORED", "Finished", "dropped_rows", "Phases", "command_line", "markdown_table", "write_results"]
