"""A pipeline that runs for minutes unless cancelled: 600 elements, one a second."""
import sys
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


def slow(x):
  time.sleep(1)
  return x


def main():
  with beam.Pipeline(options=PipelineOptions(sys.argv[1:])) as p:
    p | beam.Create(list(range(600))) | 'Slow' >> beam.Map(slow) | beam.Map(lambda x: None)


if __name__ == '__main__':
  main()
