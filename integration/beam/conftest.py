# The wheel ships Beam's runner tests without the conftest.py that adds
# their pytest option; this one adds only that.
def pytest_addoption(parser):
  parser.addoption('--test-pipeline-options', action='store', default=None)
