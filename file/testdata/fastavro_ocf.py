"""fastavro on Avro object container files, for the file connector's bulk-format interoperability test.

  fastavro_ocf.py read FILE...                  container files -> their records as JSON on stdout, one a line
  fastavro_ocf.py write FILE CODEC SCHEMA_FILE  JSON records on stdin, one a line -> a container file
"""
import json
import sys

import fastavro


def main():
    mode = sys.argv[1]
    if mode == "read":
        for path in sys.argv[2:]:
            with open(path, "rb") as f:
                reader = fastavro.reader(f)
                print("codec", reader.codec, file=sys.stderr)
                for rec in reader:
                    print(json.dumps(rec, sort_keys=True))
    elif mode == "write":
        path, codec, schema_file = sys.argv[2], sys.argv[3], sys.argv[4]
        with open(schema_file) as f:
            schema = fastavro.parse_schema(json.load(f))
        records = [json.loads(line) for line in sys.stdin if line.strip()]
        with open(path, "wb") as f:
            fastavro.writer(f, schema, records, codec=codec, sync_interval=1000)
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
