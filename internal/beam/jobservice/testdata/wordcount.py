"""WordCount on the Sluice runner: words of --input counted, one "word: n" line per word in --output."""
import argparse
import re

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


class WriteLines(beam.DoFn):
  """Appends each element to a file (LOOPBACK workers share the machine)."""

  def __init__(self, path):
    self.path = path

  def process(self, line):
    with open(self.path, 'a') as f:
      f.write(line + '\n')


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--input', required=True)
  parser.add_argument('--output', required=True)
  args, rest = parser.parse_known_args()
  with beam.Pipeline(options=PipelineOptions(rest)) as p:
    (p
     | 'Read' >> beam.io.ReadFromText(args.input)
     | 'Split' >> beam.FlatMap(lambda line: re.findall(r"[\w']+", line)).with_output_types(str)
     | 'PairWithOne' >> beam.Map(lambda w: (w, 1))
     | 'GroupAndSum' >> beam.CombinePerKey(sum)
     | 'Format' >> beam.MapTuple(lambda w, n: '%s: %d' % (w, n))
     | 'Write' >> beam.ParDo(WriteLines(args.output)))


if __name__ == '__main__':
  main()
