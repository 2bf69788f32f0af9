"""A throwaway cleanup strategy and a throwaway storage backend, each one module, registered by
``tests/test_registries.py`` at test time: what adding one to statebench takes."""
