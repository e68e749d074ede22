"""A pipeline with a primitive transform of a URN no runner knows."""
import apache_beam as beam
from apache_beam import pvalue
from apache_beam.options.pipeline_options import PipelineOptions


class Mystery(beam.PTransform):

  def expand(self, pcoll):
    return pvalue.PCollection.from_(pcoll)

  def to_runner_api_parameter(self, context):
    return 'beam:transform:sluice_test_mystery:v1', None


def main():
  import sys
  with beam.Pipeline(options=PipelineOptions(sys.argv[1:])) as p:
    p | beam.Create([1, 2, 3]) | 'TheMystery' >> Mystery() | beam.Map(print)


if __name__ == '__main__':
  main()
