package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/registry"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
	"github.com/sluice/sluice/secret"
)

// rowFormat is a table format of one part of a Kafka record, its key or
// its value: the fields it holds, decoded into and encoded from a row.
type rowFormat interface {
	// decode reads data (read from topic) into dst, one value per field in
	// order. It returns the number of fields it set to NULL because they
	// could not be converted, and errSkip for a record the format skips.
	decode(topic string, data []byte, dst []any) (nulled int, err error)
	// encode appends the fields (indexes idx into row) to dst.
	encode(topic string, dst []byte, row []any, idx []int) ([]byte, error)
}

type jsonRowFormat struct{ *jsonFormat }

func (f jsonRowFormat) decode(_ string, data []byte, dst []any) (int, error) {
	return f.jsonFormat.decode(data, dst)
}

func (f jsonRowFormat) encode(_ string, dst []byte, row []any, idx []int) ([]byte, error) {
	return f.jsonFormat.encode(dst, row, idx), nil
}

type csvRowFormat struct{ *csvFormat }

func (f csvRowFormat) decode(_ string, data []byte, dst []any) (int, error) {
	return f.csvFormat.decode(data, dst)
}

func (f csvRowFormat) encode(_ string, dst []byte, row []any, idx []int) ([]byte, error) {
	return f.csvFormat.encode(dst, row, idx), nil
}

type rawRowFormat struct{ *rawFormat }

func (f rawRowFormat) decode(_ string, data []byte, dst []any) (int, error) {
	return f.rawFormat.decode(data, dst)
}

func (f rawRowFormat) encode(_ string, dst []byte, row []any, idx []int) ([]byte, error) {
	return f.rawFormat.encodeValue(dst, row, idx)
}

// newRowFormat is the format of the key (part "key.") or the value (part
// "value." with value.format, "" with format) of table t, over fields:
// json (the default), avro-confluent, csv or raw.
func newRowFormat(t *planner.Table, part string, fields []planner.Field) (rowFormat, error) {
	name := t.Options[part+"format"]
	switch name {
	case "", "json":
		f, err := newJSONFormat(t.Options, part+"json.", fields)
		if err != nil {
			return nil, err
		}
		return jsonRowFormat{f}, nil
	case "avro-confluent":
		return newAvroConfluentFormat(t, part, fields)
	case "csv":
		f, err := newCSVFormat(t.Options, part+"csv.", fields)
		if err != nil {
			return nil, err
		}
		return csvRowFormat{f}, nil
	case "raw":
		f, err := newRawFormat(t.Options, part+"raw.", fields)
		if err != nil {
			return nil, err
		}
		return rawRowFormat{f}, nil
	}
	return nil, fmt.Errorf("option '%sformat' = '%s': not a supported format (json, avro-confluent, csv, raw)", part, name)
}

// avroConfluentFormat is Flink's avro-confluent format: Avro records in
// the schema registry's wire format. The reader and writer schema is the
// table's fields as Flink derives it (a record
// org.apache.flink.avro.generated.record, nullable columns as a union
// with null and default null); records are read with the writer schema
// each names by id, resolved against it (so older and newer writer
// schemas read by Avro's rules, whatever their record's name).
type avroConfluentFormat struct {
	fields []planner.Field
	f      *avro.Format[map[string]any]
	prefix string // the options' prefix, for errors
}

func newAvroConfluentFormat(t *planner.Table, part string, fields []planner.Field) (*avroConfluentFormat, error) {
	prefix := part + "avro-confluent."
	opt := func(k string) (string, bool) { v, ok := t.Options[prefix+k]; return v, ok }
	var errs []error
	cfg := registry.Config{}
	url, ok := opt("url")
	if old, ok2 := opt("schema-registry.url"); ok2 {
		if ok && old != url {
			errs = append(errs, fmt.Errorf("options '%surl' and '%sschema-registry.url' (its old name) disagree", prefix, prefix))
		}
		url, ok = old, true
	}
	if !ok {
		errs = append(errs, fmt.Errorf("format avro-confluent needs '%surl', the schema registry's URL", prefix))
	}
	for _, u := range strings.Split(url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.URLs = append(cfg.URLs, u)
		}
	}
	if src, ok := opt("basic-auth.credentials-source"); ok && src != "USER_INFO" {
		errs = append(errs, fmt.Errorf("option '%sbasic-auth.credentials-source' = '%s': only USER_INFO is supported", prefix, src))
	}
	if src, ok := opt("bearer-auth.credentials-source"); ok && src != "STATIC_TOKEN" {
		errs = append(errs, fmt.Errorf("option '%sbearer-auth.credentials-source' = '%s': only STATIC_TOKEN is supported", prefix, src))
	}
	var userInfo secret.Secret
	info, inDDL := opt("basic-auth.user-info")
	infoFile, inFile := opt("basic-auth.user-info-file")
	switch {
	case inDDL && inFile:
		errs = append(errs, fmt.Errorf("options '%sbasic-auth.user-info' and '%sbasic-auth.user-info-file' are exclusive", prefix, prefix))
	case inDDL:
		userInfo = secret.Value(info)
	case inFile:
		userInfo = secret.FromFile(infoFile)
	}
	if !userInfo.IsZero() {
		ui, err := userInfo.Reveal()
		user, pw, found := strings.Cut(ui, ":")
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%sbasic-auth.user-info-file: %w", prefix, err))
		case !found || user == "":
			// The value is not quoted: it may be a password.
			errs = append(errs, fmt.Errorf("the basic authentication user info (%s) is not user:password", userInfo))
		default:
			cfg.BasicAuthUser, cfg.BasicAuthPassword = user, secret.Value(pw)
		}
	}
	tok, inDDL := opt("bearer-auth.token")
	tokFile, inFile := opt("bearer-auth.token-file")
	switch {
	case inDDL && inFile:
		errs = append(errs, fmt.Errorf("options '%sbearer-auth.token' and '%sbearer-auth.token-file' are exclusive", prefix, prefix))
	case inDDL:
		cfg.BearerToken = secret.Value(tok)
	case inFile:
		cfg.BearerToken = secret.FromFile(tokFile)
	}
	cfg.CAFile, _ = opt("ssl.truststore.location")
	schema, err := avroSchemaOf(fields)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	reg, err := registry.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("format avro-confluent (%s*): %w", prefix, err)
	}
	subject, ok := opt("subject")
	if !ok && part == "key." {
		// Flink's default subject of a key: <topic>-key.
		subject = t.Options[planner.OptTopic] + "-key"
	}
	f, err := avro.New[map[string]any](reg, schema, avro.Options{Subject: subject, AnyRecordName: true})
	if err != nil {
		return nil, fmt.Errorf("format avro-confluent (%s*): the table's Avro schema: %w", prefix, err)
	}
	return &avroConfluentFormat{fields: fields, f: f, prefix: prefix}, nil
}

// avroSchemaOf is the Avro schema Flink derives from a row of fields, in
// the order Flink prints it.
func avroSchemaOf(fields []planner.Field) (string, error) {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[`)
	for i, f := range fields {
		at, err := avroTypeOf(f.Type)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", f.Name, err)
		}
		name, _ := json.Marshal(f.Name)
		if i > 0 {
			b.WriteByte(',')
		}
		if f.Type.NotNull {
			fmt.Fprintf(&b, `{"name":%s,"type":%s}`, name, at)
		} else {
			fmt.Fprintf(&b, `{"name":%s,"type":["null",%s],"default":null}`, name, at)
		}
	}
	b.WriteString("]}")
	return b.String(), nil
}

// avroTypeOf is the Avro type (JSON) of a SQL type.
func avroTypeOf(t types.Type) (string, error) {
	switch t.Kind {
	case types.String:
		return `"string"`, nil
	case types.Boolean:
		return `"boolean"`, nil
	case types.TinyInt, types.SmallInt, types.Int:
		return `"int"`, nil
	case types.BigInt:
		return `"long"`, nil
	case types.Float:
		return `"float"`, nil
	case types.Double:
		return `"double"`, nil
	case types.Bytes:
		return `"bytes"`, nil
	case types.Decimal:
		return fmt.Sprintf(`{"type":"bytes","logicalType":"decimal","precision":%d,"scale":%d}`, t.Precision, t.Scale), nil
	case types.Date:
		return `{"type":"int","logicalType":"date"}`, nil
	case types.Time:
		return `{"type":"int","logicalType":"time-millis"}`, nil
	case types.Timestamp, types.TimestampLTZ:
		if t.Precision > 3 {
			return "", fmt.Errorf("%s: the avro-confluent format writes timestamps in milliseconds (precision 3 at most)", t.Plain())
		}
		return `{"type":"long","logicalType":"timestamp-millis"}`, nil
	}
	return "", fmt.Errorf("%s is not supported by the avro-confluent format yet", t.Plain())
}

func (f *avroConfluentFormat) decode(topic string, data []byte, dst []any) (int, error) {
	if data == nil {
		return 0, errSkip // a tombstone: no row, as Flink's
	}
	m, err := f.f.Deserialize(topic, data)
	if errors.Is(err, formats.ErrSkip) {
		return 0, errSkip // an empty record
	}
	if err != nil {
		return 0, err
	}
	for i, fl := range f.fields {
		v, err := fromAvro(m[fl.Name], fl.Type)
		if err != nil {
			id, _, _ := registry.SplitHeader("avro-confluent", data) // read above, so well formed
			return 0, &formats.Error{Format: "avro-confluent", Op: "decode", SchemaID: id, Kind: formats.ErrMalformed,
				Reason: fmt.Sprintf("field %s: %v", fl.Name, err)}
		}
		dst[i] = v
	}
	return 0, nil
}

// fromAvro converts a value hamba decoded into the SQL type's value.
func fromAvro(v any, t types.Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case string:
		if t.Kind == types.String {
			return x, nil
		}
	case bool:
		if t.Kind == types.Boolean {
			return x, nil
		}
	case int:
		switch t.Kind {
		case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
			return int64(x), nil
		case types.Float, types.Double:
			return float64(x), nil
		}
	case int64:
		switch t.Kind {
		case types.BigInt:
			return x, nil
		case types.Float, types.Double:
			return float64(x), nil
		}
	case float32:
		if t.Kind == types.Float || t.Kind == types.Double {
			return float64(x), nil
		}
	case float64:
		if t.Kind == types.Float || t.Kind == types.Double {
			return x, nil
		}
	case []byte:
		if t.Kind == types.Bytes {
			return x, nil
		}
	case *big.Rat:
		if t.Kind == types.Decimal {
			d, err := types.RatToDecimal(x, t.Precision, t.Scale)
			if err != nil {
				return nil, nil // does not fit: NULL, as Flink's DecimalData.fromBigDecimal
			}
			return d, nil
		}
	case time.Time:
		switch t.Kind {
		case types.Date:
			return x.Unix() / 86400, nil
		case types.Timestamp, types.TimestampLTZ:
			return x.UnixMilli(), nil
		}
	case time.Duration:
		if t.Kind == types.Time {
			return x.Milliseconds(), nil
		}
	}
	return nil, fmt.Errorf("an Avro %T cannot be read as %s", v, t.Plain())
}

func (f *avroConfluentFormat) encode(topic string, dst []byte, row []any, idx []int) ([]byte, error) {
	m := make(map[string]any, len(idx))
	for j, i := range idx {
		m[f.fields[j].Name] = toAvro(row[i], f.fields[j].Type)
	}
	b, err := f.f.Serialize(topic, m)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// toAvro converts a SQL value into the Go value hamba writes for the
// column's Avro type.
func toAvro(v any, t types.Type) any {
	if v == nil {
		return nil
	}
	switch t.Kind {
	case types.TinyInt, types.SmallInt, types.Int:
		return int(v.(int64))
	case types.Float:
		return float32(v.(float64))
	case types.Decimal:
		return new(big.Rat).SetFrac(big.NewInt(v.(int64)), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil))
	case types.Date:
		return time.Unix(v.(int64)*86400, 0).UTC()
	case types.Time:
		return time.Duration(v.(int64)) * time.Millisecond
	case types.Timestamp, types.TimestampLTZ:
		return time.UnixMilli(v.(int64)).UTC()
	}
	return v
}
