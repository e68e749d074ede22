"""Side inputs of every access pattern: AsSingleton, AsList, AsDict and AsMultiMap.
Writes one line per main element."""
import argparse

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pvalue import AsDict, AsList, AsMultiMap, AsSingleton


class Write(beam.DoFn):

  def __init__(self, path):
    self.path = path

  def process(self, line):
    with open(self.path, 'a') as f:
      f.write(line + '\n')


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--output', required=True)
  args, rest = parser.parse_known_args()
  with beam.Pipeline(options=PipelineOptions(rest)) as p:
    main_ = p | 'Main' >> beam.Create(['a', 'b', 'c'])
    pairs = p | 'Pairs' >> beam.Create([('a', 1), ('b', 2), ('a', 3)])
    total = pairs | beam.Map(lambda kv: kv[1]) | beam.CombineGlobally(sum)
    (main_
     | 'Join' >> beam.Map(
         lambda k, total, items, d, mm: '%s total=%d items=%d dict=%s multi=%s' % (
             k, total, len(items), d.get(k), sorted(mm[k])),
         AsSingleton(total), AsList(pairs), AsDict(pairs), AsMultiMap(pairs))
     | 'Write' >> beam.ParDo(Write(args.output)))


if __name__ == '__main__':
  main()
