"""GroupByKey in fixed windows of 10 s over timestamped elements: one
"key [start,end) v1,v2,..." line per key and window in --output."""
import argparse

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import window


class WriteGroups(beam.DoFn):

  def __init__(self, path):
    self.path = path

  def process(self, kv, w=beam.DoFn.WindowParam):
    key, values = kv
    with open(self.path, 'a') as f:
      f.write('%s [%d,%d) %s\n' % (key, int(w.start), int(w.end), ','.join(str(v) for v in sorted(values))))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--output', required=True)
  args, rest = parser.parse_known_args()
  # (key, value, event time in seconds)
  events = [('k%d' % (i % 3), i, i * 7 % 45) for i in range(60)]
  with beam.Pipeline(options=PipelineOptions(rest)) as p:
    (p
     | 'Events' >> beam.Create(events)
     | 'Stamp' >> beam.Map(lambda e: window.TimestampedValue((e[0], e[1]), e[2]))
     | 'Fixed10s' >> beam.WindowInto(window.FixedWindows(10))
     | 'Group' >> beam.GroupByKey()
     | 'Write' >> beam.ParDo(WriteGroups(args.output)))


if __name__ == '__main__':
  main()
