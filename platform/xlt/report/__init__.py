"""Result tables and run summaries."""

from .finished import NOTHING_SCORED, Finished
from .phases import Phases
from .tables import command_line, markdown_table, write_results

__all__ = ["NOTHING_SCORED", "Finished", "Phases", "command_line", "markdown_table", "write_results"]
