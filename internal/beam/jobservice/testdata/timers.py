"""A stateful DoFn with an event-time timer: values buffered per key in a
bag and flushed when the watermark passes the timer. Writes
"key sum=S count=N" once per key."""
import argparse

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, TimerSpec, on_timer


class BufferUntilWatermark(beam.DoFn):
  BUFFER = BagStateSpec('buffer', VarIntCoder())
  FLUSH = TimerSpec('flush', TimeDomain.WATERMARK)

  def __init__(self, path):
    self.path = path

  def process(self, kv, buf=beam.DoFn.StateParam(BUFFER), flush=beam.DoFn.TimerParam(FLUSH)):
    buf.add(kv[1])
    flush.set(100)

  @on_timer(FLUSH)
  def on_flush(self, key=beam.DoFn.KeyParam, buf=beam.DoFn.StateParam(BUFFER)):
    values = list(buf.read())
    buf.clear()
    with open(self.path, 'a') as f:
      f.write('%s sum=%d count=%d\n' % (key, sum(values), len(values)))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--output', required=True)
  args, rest = parser.parse_known_args()
  with beam.Pipeline(options=PipelineOptions(rest)) as p:
    (p
     | beam.Create([('k%d' % (i % 4), i) for i in range(40)])
     | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1]))
     | 'Buffer' >> beam.ParDo(BufferUntilWatermark(args.output)))


if __name__ == '__main__':
  main()
