"""The HTTP service (FastAPI): `memvec serve`."""
