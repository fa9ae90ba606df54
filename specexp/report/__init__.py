"""Reports: read result records only, render Markdown, HTML and charts."""
