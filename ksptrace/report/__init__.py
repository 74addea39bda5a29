"""The report: composes the studies' results into HTML, Markdown and JSON through templates."""
