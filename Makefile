# The two commands a fresh machine needs are `make demo` and `make test`;
# both run `setup` first, which installs only what is missing.
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest

.PHONY: setup test demo bench tansu nightly-tansu clean distclean

setup:
	@bash scripts/setup.sh

# tests/ always; suites/ marked chaos-and-not-nightly once the suites exist
test: setup
	@$(PYTEST) tests $(wildcard suites/test_*.py) -m "not nightly" -p no:cacheprovider --durations=30

demo: setup
	@$(PY) -m chaoskit.demo

bench: setup
	@bash scripts/bench.sh

# a broker nobody here wrote, built once per machine into the user's cache (never by test or demo)
tansu:
	@bash scripts/tansu.sh

# a night on tansu: its build, the generic suites on SQLite and PostgreSQL, a search on each
nightly-tansu: setup
	@bash scripts/nightly_tansu.sh

clean:
	rm -rf reports/runs reports/allure-results reports/nightly .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -not -path './.venv/*' -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
