"""The serving study: a real HTTP inference server, the load generators that drive it, its cell."""
