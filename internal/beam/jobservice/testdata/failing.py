"""A pipeline whose DoFn raises on one element."""
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


def explode(x):
  if x == 7:
    raise ValueError('sluice test: element %d is cursed' % x)
  return x


def main():
  with beam.Pipeline(options=PipelineOptions(sys.argv[1:])) as p:
    p | beam.Create(list(range(20))) | 'Explode' >> beam.Map(explode) | beam.Map(lambda x: None)


if __name__ == '__main__':
  main()
