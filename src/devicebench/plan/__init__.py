"""Planning a study: its config, the grid of cells, each cell's typed spec, and the blocks."""
