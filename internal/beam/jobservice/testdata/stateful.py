"""A stateful DoFn: a running count per key in bag and combining state.
Writes "key n seen" for each element, n its position in the key's order."""
import argparse

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.combiners import CountCombineFn
from apache_beam.transforms.userstate import BagStateSpec, CombiningValueStateSpec


class RunningCount(beam.DoFn):
  SEEN = BagStateSpec('seen', VarIntCoder())
  COUNT = CombiningValueStateSpec('count', VarIntCoder(), CountCombineFn())

  def __init__(self, path):
    self.path = path

  def process(self, kv, seen=beam.DoFn.StateParam(SEEN), count=beam.DoFn.StateParam(COUNT)):
    key, value = kv
    seen.add(value)
    count.add(1)
    n = count.read()
    if n != len(list(seen.read())):
      raise ValueError('bag and combining state disagree for %s' % key)
    with open(self.path, 'a') as f:
      f.write('%s %d seen\n' % (key, n))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--output', required=True)
  args, rest = parser.parse_known_args()
  with beam.Pipeline(options=PipelineOptions(rest)) as p:
    (p
     | beam.Create([('k%d' % (i % 5), i) for i in range(100)])
     | 'Count' >> beam.ParDo(RunningCount(args.output)))


if __name__ == '__main__':
  main()
