"""User-facing states without TTL: thin, validating wrappers over a backend's raw states."""
