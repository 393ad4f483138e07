"""Result tables and run summaries."""

from .finished import Finished
from .phases import Phases
from .tables import command_line, markdown_table, write_results

__all__ = ["Finished", "Phases", "command_line", "markdown_table", "write_results"]
