# make test ARGS="-k token -x" passes ARGS to pytest (both passes).

.PHONY: test run lint bench lock openapi

test:
	./scripts/test $(ARGS)

run:
	./scripts/run

lint:
	.venv/bin/ruff check .

bench:
	.venv/bin/python -m bench

# Rewrite requirements.txt and requirements-dev.txt from pyproject.toml (docs/development.md).
lock:
	.venv/bin/python -m devtools.lock $(ARGS)

# Rewrite authsvc/openapi/openapi.json from base.json and the admin schemas.
openapi:
	.venv/bin/python -m authsvc.openapi
