"""Result tables and run summaries."""

from .tables import command_line, markdown_table, write_results

__all__ = ["command_line", "markdown_table", "write_results"]
