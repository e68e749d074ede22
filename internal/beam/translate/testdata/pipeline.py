# Writes testdata/pipeline.pb: the pipeline the Python SDK submits (python pipeline.py pipeline.pb).
import sys, re
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.portable_runner import PortableRunner
from apache_beam.transforms import window
opts = PipelineOptions([])
p = beam.Pipeline(options=opts)
lines = p | 'Read' >> beam.io.ReadFromText('input.txt')
counts = (lines | 'Split' >> beam.FlatMap(lambda l: re.findall(r"[\w']+", l)).with_output_types(str)
   | 'PairWithOne' >> beam.Map(lambda w: (w, 1)) | 'GroupAndSum' >> beam.CombinePerKey(sum))
windowed = (p | 'Events' >> beam.Create([('a', 1), ('b', 2)]) | 'Stamp' >> beam.Map(lambda e: window.TimestampedValue(e, e[1]))
   | 'Fixed' >> beam.WindowInto(window.FixedWindows(10)) | 'Group' >> beam.GroupByKey() | 'Sizes' >> beam.MapTuple(lambda k, vs: (k, len(vs))))
((counts, p | 'More' >> beam.Create([('c', 3)])) | 'Both' >> beam.Flatten() | 'Format' >> beam.MapTuple(lambda w, n: '%s: %d' % (w, n)) | 'Write' >> beam.io.WriteToText('counts'))
proto = PortableRunner._optimize_pipeline(p.to_runner_api(), opts)
open(sys.argv[1], 'wb').write(proto.SerializeToString())
