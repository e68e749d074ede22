"""TestStream pipelines: windows, triggers, allowed lateness and late data
in streaming. --case picks one; each group is written to --output as
"key window values TIMING first=.. last=.. index=.. nonspec=.." (the
PaneInfo the DoFn sees)."""
import argparse

import apache_beam as beam
from apache_beam import coders
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms import trigger
from apache_beam.transforms import window
from apache_beam.transforms.window import TimestampedValue

TIMING = {0: 'EARLY', 1: 'ON_TIME', 2: 'LATE', 3: 'UNKNOWN'}


class WriteGroups(beam.DoFn):

  def __init__(self, path):
    self.path = path

  def process(self, kv, w=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam):
    key, values = kv
    if isinstance(w, window.GlobalWindow):
      ws = 'global'
    else:
      ws = '[%d,%d)' % (int(w.start), int(w.end))
    with open(self.path, 'a') as f:
      f.write('%s %s %s %s first=%s last=%s index=%d nonspec=%d\n' % (
          key, ws, ','.join(str(v) for v in sorted(values)), TIMING[pane.timing],
          pane.is_first, pane.is_last, pane.index, pane.nonspeculative_index))


def kv(v, ts):
  return TimestampedValue(('k', v), ts)


def late():
  """Fixed windows of 10 s, 5 s of allowed lateness: an on-time pane, a
  late pane, an element beyond the lateness dropped."""
  stream = (TestStream()
            .advance_watermark_to(0)
            .add_elements([kv(1, 1), kv(2, 5)])
            .advance_watermark_to(10)
            .add_elements([kv(3, 3)])
            .advance_processing_time(5)
            .advance_watermark_to(20)
            .add_elements([kv(4, 4)])
            .add_elements([kv(6, 25)])
            .advance_watermark_to_infinity())
  win = beam.WindowInto(window.FixedWindows(10), allowed_lateness=5)
  return stream, win


def early(mode):
  """Early firings after every two elements, then the on-time pane."""
  def make():
    stream = (TestStream()
              .advance_watermark_to(0)
              .add_elements([kv(1, 1), kv(2, 2)])
              .add_elements([kv(3, 3)])
              .advance_watermark_to(10)
              .advance_watermark_to_infinity())
    win = beam.WindowInto(
        window.FixedWindows(10),
        trigger=trigger.AfterWatermark(early=trigger.AfterCount(2)),
        accumulation_mode=mode)
    return stream, win
  return make


def early_late():
  """Early and late firings, accumulating, with allowed lateness."""
  stream = (TestStream()
            .advance_watermark_to(0)
            .add_elements([kv(1, 1), kv(2, 2)])
            .add_elements([kv(3, 3)])
            .advance_watermark_to(10)
            .add_elements([kv(4, 4)])
            .advance_watermark_to(30)
            .add_elements([kv(5, 5)])
            .advance_watermark_to_infinity())
  win = beam.WindowInto(
      window.FixedWindows(10),
      trigger=trigger.AfterWatermark(early=trigger.AfterCount(2), late=trigger.AfterCount(1)),
      accumulation_mode=trigger.AccumulationMode.ACCUMULATING,
      allowed_lateness=10)
  return stream, win


def repeated():
  """Repeatedly(AfterCount(2)) in the global window, discarding."""
  stream = (TestStream()
            .add_elements([kv(i, 0) for i in range(1, 6)])
            .advance_watermark_to_infinity())
  win = beam.WindowInto(
      window.GlobalWindows(),
      trigger=trigger.Repeatedly(trigger.AfterCount(2)),
      accumulation_mode=trigger.AccumulationMode.DISCARDING)
  return stream, win


def sessions():
  """Session windows with a gap of 10 s."""
  stream = (TestStream()
            .advance_watermark_to(0)
            .add_elements([kv(1, 1), kv(2, 5)])
            .add_elements([kv(3, 30)])
            .advance_watermark_to(20)
            .add_elements([kv(4, 35), kv(5, 12)])
            .advance_watermark_to_infinity())
  return stream, beam.WindowInto(window.Sessions(10))


def strings():
  """A TestStream of strings (StrUtf8Coder: the runner writes each
  element's length, which Python's outer-context encoding lacks), keyed
  by a Map, in fixed windows."""
  stream = (TestStream(coder=coders.StrUtf8Coder())
            .add_elements([TimestampedValue('a', 1), TimestampedValue('bb', 2)])
            .advance_watermark_to(10)
            .add_elements([TimestampedValue('late', 3), TimestampedValue('ccc', 12)])
            .advance_watermark_to_infinity())
  return stream, beam.Map(lambda s: ('k', s)) | beam.WindowInto(window.FixedWindows(10))


def after_count_finished():
  """AfterCount(3) (not repeated), accumulating: the window closes when
  it fires and drops the rest (Beam's test_after_count_streaming)."""
  stream = (TestStream()
            .advance_watermark_to(0)
            .add_elements([('A', 1), ('A', 2), ('A', 3)])
            .add_elements([('A', 4), ('A', 5), ('A', 6)])
            .add_elements([('B', 1), ('B', 2), ('B', 3)])
            .advance_watermark_to_infinity())
  win = beam.WindowInto(
      window.FixedWindows(10),
      trigger=trigger.AfterCount(3),
      accumulation_mode=trigger.AccumulationMode.ACCUMULATING)
  return stream, win


def proctime():
  """A processing-time trigger: refused at Prepare."""
  stream = TestStream().add_elements([kv(1, 1)]).advance_watermark_to_infinity()
  win = beam.WindowInto(
      window.FixedWindows(10),
      trigger=trigger.AfterWatermark(early=trigger.AfterProcessingTime(5)),
      accumulation_mode=trigger.AccumulationMode.DISCARDING)
  return stream, win


CASES = {
    'late': late,
    'early_accumulating': early(trigger.AccumulationMode.ACCUMULATING),
    'early_discarding': early(trigger.AccumulationMode.DISCARDING),
    'early_late': early_late,
    'repeated': repeated,
    'sessions': sessions,
    'strings': strings,
    'after_count_finished': after_count_finished,
    'proctime': proctime,
}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--output', required=True)
  parser.add_argument('--case', required=True, choices=sorted(CASES))
  args, rest = parser.parse_known_args()
  stream, win = CASES[args.case]()
  with beam.Pipeline(options=PipelineOptions(rest + ['--streaming', '--allow_unsafe_triggers'])) as p:
    (p
     | 'Events' >> stream
     | 'Window' >> win
     | 'Group' >> beam.GroupByKey()
     | 'Write' >> beam.ParDo(WriteGroups(args.output)))


if __name__ == '__main__':
  main()
