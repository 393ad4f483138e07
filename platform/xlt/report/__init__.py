"""Result tables and run summaries."""

from .tables import markdown_table, write_results

__all__ = ["markdown_table", "write_results"]
