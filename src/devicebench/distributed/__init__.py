"""Data-parallel training cells: one cell, several ranks (GPUs, or processes on the CPU).

The cell runner launches torchrun from the cell, so a cell is still one job: `launch` decides the
world size, the skips and the command; `rank` is each rank's process; `backend` is the DDP
version of the torch backend.
"""
