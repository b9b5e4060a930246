# make test ARGS="-k token -x" passes ARGS to pytest (both passes).

.PHONY: test run lint bench lock openapi translations

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

# Extract the catalogs' messages (messages.pot), update every language's .po from it, and compile the .mo
# files the service reads (docs/translations.md). scripts/test and scripts/run compile them too.
# A catalog's POT-Creation-Date stays as it is (the template has no header to take one from): a run that
# changes no message changes no file.
translations:
	.venv/bin/pybabel extract -F babel.cfg -k _l -k N_ --no-location --sort-output --omit-header \
		-o authsvc/translations/messages.pot .
	.venv/bin/pybabel update -i authsvc/translations/messages.pot -d authsvc/translations --no-fuzzy-matching \
		--ignore-obsolete --ignore-pot-creation-date
	.venv/bin/python -m devtools.translations
