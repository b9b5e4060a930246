# make test ARGS="-k token -x" passes ARGS to pytest (both passes).

.PHONY: test run lint bench

test:
	./scripts/test $(ARGS)

run:
	./scripts/run

lint:
	.venv/bin/ruff check .

bench:
	.venv/bin/python -m bench
