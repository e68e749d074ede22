"""fastavro on the schema registry's wire format, for the Avro format's interoperability test.

  interop.py write SCHEMA_FILE ID   JSON records on stdin, one a line -> hex wire records on stdout
  interop.py read SCHEMA_FILE ID    hex wire records on stdin -> JSON records on stdout

The header (magic byte 0, the 4-byte big-endian schema id) is written and checked here;
the payload is fastavro's schemaless encoding.
"""
import io
import json
import struct
import sys

import fastavro


def main():
    mode, schema_file, schema_id = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(schema_file) as f:
        schema = fastavro.parse_schema(json.load(f))
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        if mode == "write":
            buf = io.BytesIO()
            buf.write(struct.pack(">bI", 0, schema_id))
            fastavro.schemaless_writer(buf, schema, json.loads(line))
            print(buf.getvalue().hex())
        else:
            data = bytes.fromhex(line)
            magic, got = struct.unpack(">bI", data[:5])
            if magic != 0 or got != schema_id:
                sys.exit("bad header: magic %d, schema id %d (want %d)" % (magic, got, schema_id))
            print(json.dumps(fastavro.schemaless_reader(io.BytesIO(data[5:]), schema), sort_keys=True))


if __name__ == "__main__":
    main()
