"""Beam's portable-runner conformance tests (the wheel's PrismRunnerTest)
against the Sluice job server at $SLUICE_BEAM_JOB_ENDPOINT."""
import os

from apache_beam.runners.portability import prism_runner_test


class SluiceRunnerTest(prism_runner_test.PrismRunnerTest):

  @classmethod
  def _create_job_endpoint(cls):
    return os.environ['SLUICE_BEAM_JOB_ENDPOINT']


# Keep pytest from collecting the base class under its own name.
del prism_runner_test
