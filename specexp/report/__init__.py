"""Reports: read result records only, render Markdown (and later HTML and charts)."""
