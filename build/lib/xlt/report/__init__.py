"""Result tables and run summaries."""

from .phases import Phases
from .tables import command_line, markdown_table, write_results

__all__ = ["Phases", "command_line", "markdown_table", "write_results"]
