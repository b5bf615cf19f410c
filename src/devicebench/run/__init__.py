"""Running a cell: the runner (one spec -> one record, in a fresh worker), the worker (a scenario
lookup), the timed window every scenario shares, and the launchers and limits around them."""
