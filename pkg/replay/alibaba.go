package replay

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/internal/jsonscan"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// The image-generation traces of Alibaba's diffusion serving:
//
//   - GenTD26 (cluster-trace-v2026-GenAI) lora_request_trace.csv: one row per
//     request with gmt_create (date and time, 1 s resolution), predict_type
//     (TXT_2_IMG, IMG_2_IMG, INPAINTING), predict_status (SUCCEED, FAILED,
//     PENDING, PROCESSING), groupId, prompt_length, negative_prompt_length,
//     num_images_per_prompt, num_inference_steps,
//     checkpoint_model_version_id (the base model) and num_lora (a count:
//     the adapters are not named). Rows that did not succeed are left out
//     unless Options.KeepFailed; rows with a missing field are skipped and
//     counted (the trace's unfinished rows have empty fields).
//   - The text-to-image trace (diffusion_model_request_trace.json): a JSON
//     array (JSON Lines is read too) of objects with timestamp (seconds),
//     ip, scene_id, base_model_id, controlnets and loras (lists or null).
//     Options.Scene keeps one scene. It gives no prompt length: the caller
//     chooses it (HasInput is false).
//
// Both load as image-generation traces: every row has a Generation (images
// to generate, steps, adapters) and an instance (groupId, ip).

// genRow is what an image-generation row asks for, before it is stored.
type genRow struct {
	images, steps, neg int32
	loras, controlnets []string
}

// genColumns stores the generation fields by column: counts as small
// integers, adapter names interned (a row's LoRAs, then its ControlNets).
type genColumns struct {
	images, steps []uint16
	neg           []int32
	nlora         []uint16 // how many of the row's adapters are LoRAs
	off           []int    // len n+1: row i's adapters are ids[off[i]:off[i+1]]
	ids           []uint32
	names         []string
	idx           map[string]uint32
}

func newGenColumns() *genColumns {
	return &genColumns{off: []int{0}, idx: map[string]uint32{}}
}

// Limits of what one request may ask for (larger values are unusable rows).
const (
	maxGenImages   = 1<<16 - 1
	maxGenSteps    = 1<<16 - 1
	maxGenAdapters = 1<<16 - 1
)

// add stores r (already checked against the limits).
func (g *genColumns) add(r *genRow) {
	g.images = append(g.images, uint16(r.images))
	g.steps = append(g.steps, uint16(r.steps))
	g.neg = append(g.neg, r.neg)
	g.nlora = append(g.nlora, uint16(len(r.loras)))
	for _, n := range r.loras {
		g.ids = append(g.ids, intern(g.idx, &g.names, n))
	}
	for _, n := range r.controlnets {
		g.ids = append(g.ids, intern(g.idx, &g.names, n))
	}
	g.off = append(g.off, len(g.ids))
}

func (g *genColumns) permute(idx []int32) {
	g.images = permute(g.images, idx)
	g.steps = permute(g.steps, idx)
	g.neg = permute(g.neg, idx)
	g.nlora = permute(g.nlora, idx)
	g.off, g.ids = permuteRuns(g.off, g.ids, idx)
}

// check reports the first field of r beyond the limits.
func (r *genRow) check() (string, error) {
	switch {
	case r.images < 1:
		return "images", errors.New("want at least 1 image")
	case r.images > maxGenImages:
		return "images", errOverflow
	case r.steps > maxGenSteps:
		return "steps", errOverflow
	case len(r.loras) > maxGenAdapters || len(r.controlnets) > maxGenAdapters:
		return "adapters", errOverflow
	}
	return "", nil
}

// HasGenerations reports whether the trace is image-generation load.
func (t *Trace) HasGenerations() bool { return t.gen != nil }

// Generation returns what row i asks to generate (nil for a text trace).
// It is a new value on every call.
func (t *Trace) Generation(i int) *arrival.Generation {
	g := t.gen
	if g == nil {
		return nil
	}
	gen := &arrival.Generation{Images: int(g.images[i]), Steps: int(g.steps[i]), NegativeTokens: int(g.neg[i])}
	ids := g.ids[g.off[i]:g.off[i+1]]
	nl := int(g.nlora[i])
	if nl > 0 {
		gen.LoRAs = make([]string, nl)
		for j, id := range ids[:nl] {
			gen.LoRAs[j] = g.names[id]
		}
	}
	if len(ids) > nl {
		gen.ControlNets = make([]string, len(ids)-nl)
		for j, id := range ids[nl:] {
			gen.ControlNets[j] = g.names[id]
		}
	}
	return gen
}

// LoRAIDs returns the ids of row i's LoRA adapters (names: AdapterName);
// nil for a text trace. The slice aliases the trace: do not modify it.
func (t *Trace) LoRAIDs(i int) []uint32 {
	if t.gen == nil {
		return nil
	}
	s := t.gen.off[i]
	e := s + int(t.gen.nlora[i])
	return t.gen.ids[s:e:e]
}

// AdapterName is the name of an adapter id of LoRAIDs.
func (t *Trace) AdapterName(id uint32) string { return t.gen.names[id] }

// HasAdapterNames reports whether the trace names its LoRAs (the
// text-to-image trace does; GenTD26 only counts them).
func (t *Trace) HasAdapterNames() bool { return t.gen != nil && t.Format != AlibabaLoRA }

// ModelID is row i's model as an index into Models (0 without models).
func (t *Trace) ModelID(i int) uint32 {
	if t.model == nil {
		return 0
	}
	return t.model[i]
}

// HasInstances reports whether rows name the instance (serving group, ip)
// they were sent to.
func (t *Trace) HasInstances() bool { return t.inst != nil }

// InstanceID is row i's instance as an index into Instances.
func (t *Trace) InstanceID(i int) uint32 {
	if t.inst == nil {
		return 0
	}
	return t.inst[i]
}

// Instances lists the distinct instances in order of first appearance in
// the file (nil when the format has none).
func (t *Trace) Instances() []string { return t.insts }

// GenTD26 names LoRAs only by count: a row with num_lora k lists the
// placeholder names lora-1 … lora-k.
var loraPlaceholders = func() []string {
	s := make([]string, 64)
	for i := range s {
		s[i] = "lora-" + strconv.Itoa(i+1)
	}
	return s
}()

func placeholderLoRAs(dst []string, k int) []string {
	dst = dst[:0]
	for i := range k {
		if i < len(loraPlaceholders) {
			dst = append(dst, loraPlaceholders[i])
		} else {
			dst = append(dst, "lora-"+strconv.Itoa(i+1))
		}
	}
	return dst
}

// The GenTD26 columns.
const (
	loraTS     = "gmt_create"
	loraIn     = "prompt_length"
	loraModel  = "checkpoint_model_version_id"
	loraImages = "num_images_per_prompt"
	loraSteps  = "num_inference_steps"
	loraCount  = "num_lora"
	loraNeg    = "negative_prompt_length"
	loraStatus = "predict_status"
	loraType   = "predict_type"
	loraGroup  = "groupId"
)

// isLoRAHeader reports whether a CSV header is GenTD26's.
func isLoRAHeader(has func(string) bool) bool {
	return has(loraTS) && has(loraModel) && has(loraSteps) && has(loraImages)
}

// readLoRA reads a GenTD26 lora_request_trace.csv after its header.
func readLoRA(cl *csvLines, header []string, t *Trace, o *Options) error {
	t.Format = AlibabaLoRA
	const (
		cTS = iota
		cIn
		cModel
		cImages
		cSteps
		cCount
		cNeg
		cStatus
		cType
		cGroup
		nCols
	)
	names := [nCols]string{
		cmp.Or(o.TimestampColumn, loraTS), cmp.Or(o.InputColumn, loraIn), cmp.Or(o.ModelColumn, loraModel),
		loraImages, loraSteps, loraCount, loraNeg, loraStatus, loraType, loraGroup,
	}
	var idx [nCols]int
	var missing []string
	for k := range nCols {
		idx[k] = colIndex(header, names[k])
		if idx[k] < 0 && k <= cSteps {
			missing = append(missing, fmt.Sprintf("%q", names[k]))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("replay: %s: line 1: %s format: no column %s in the header %q", t.Path, AlibabaLoRA, strings.Join(missing, ", no column "), clipHeader(header))
	}
	unit := cmp.Or(o.Unit, DateTime)
	t.Unit = unit
	b := newBuilder(t, o, columns{in: true, model: true, gen: true, instance: idx[cGroup] >= 0})
	t.Skipped.FailedWhy = "predict_status other than SUCCEED"
	if idx[cType] >= 0 {
		t.Tasks = map[string]int{}
	}
	var rec []string
	get := columnGetter(idx[:], &rec)
	count := func(k int) (int32, error) {
		s, ok := get(k)
		if !ok {
			return 0, errMissing
		}
		return parseCount(s)
	}
	var r row
	parseRow := func(line int) error {
		t.Rows++
		r = row{line: line, burst: -1, gen: genRow{loras: r.gen.loras[:0]}}
		ts, ok := get(cTS)
		if !ok {
			return b.skip(line, names[cTS], errMissing)
		}
		at, err := parseTimestamp(ts, unit)
		if err != nil {
			return b.skip(line, names[cTS], err)
		}
		r.at = at
		if r.in, err = count(cIn); err != nil {
			return b.skip(line, names[cIn], err)
		}
		m, _ := get(cModel)
		if r.model = trimSpace(m); r.model == "" {
			return b.skip(line, names[cModel], errEmpty)
		}
		if r.gen.images, err = count(cImages); err != nil {
			return b.skip(line, names[cImages], err)
		}
		if r.gen.steps, err = count(cSteps); err != nil {
			return b.skip(line, names[cSteps], err)
		}
		if idx[cCount] >= 0 {
			k, err := count(cCount)
			if err == nil && k > maxGenAdapters {
				err = errOverflow
			}
			if err != nil {
				return b.skip(line, names[cCount], err)
			}
			r.gen.loras = placeholderLoRAs(r.gen.loras, int(k))
		}
		if s, ok := get(cNeg); ok && trimSpace(s) != "" {
			if r.gen.neg, err = count(cNeg); err != nil {
				return b.skip(line, names[cNeg], err)
			}
		}
		if field, err := r.gen.check(); err != nil {
			switch field {
			case "images":
				field = names[cImages]
			case "steps":
				field = names[cSteps]
			}
			return b.skip(line, field, err)
		}
		if s, ok := get(cStatus); ok && !strings.EqualFold(trimSpace(s), "SUCCEED") && !o.KeepFailed {
			t.Skipped.Failed++
			return nil
		}
		r.instance, _ = get(cGroup)
		r.instance = trimSpace(r.instance)
		if t.Tasks != nil {
			typ, _ := get(cType)
			typ = trimSpace(typ)
			if _, ok := t.Tasks[typ]; !ok {
				typ = strings.Clone(typ)
			}
			t.Tasks[typ]++
		}
		return b.add(&r)
	}
	err := eachCSVRecord(cl, t, b, func(line int, fields []string) error {
		rec = fields
		return parseRow(line)
	})
	return b.end(err)
}

// The text-to-image trace's keys.
const (
	t2iTS          = "timestamp"
	t2iModel       = "base_model_id"
	t2iScene       = "scene_id"
	t2iIP          = "ip"
	t2iLoRAs       = "loras"
	t2iControlNets = "controlnets"
)

// isT2IObject reports whether a JSON object is a text-to-image trace row.
func isT2IObject(v *fastjson.Value) bool {
	return v.Exists(t2iModel) && (v.Exists(t2iLoRAs) || v.Exists(t2iControlNets) || v.Exists(t2iScene))
}

// t2iParser turns text-to-image objects into rows.
type t2iParser struct {
	t         *Trace
	o         *Options
	b         *builder
	r         row
	ts, model string
	unit      Unit
	num       []byte
	loraNames []string
	cnetNames []string
}

func newT2IParser(t *Trace, o *Options) *t2iParser {
	t.Format = AlibabaT2I
	p := &t2iParser{t: t, o: o, ts: cmp.Or(o.TimestampColumn, t2iTS),
		model: cmp.Or(o.ModelColumn, t2iModel), unit: cmp.Or(o.Unit, Seconds)}
	t.Unit = p.unit
	p.b = newBuilder(t, o, columns{model: true, gen: true, instance: true})
	return p
}

// text returns a scalar member as text: a string as it is, a number as
// written; ok is false when the key is absent, null or not a scalar.
func (p *t2iParser) text(v *fastjson.Value, key string) (string, bool) {
	if x := v.Get(key); x != nil {
		return p.scalar(x)
	}
	return "", false
}

// scalar returns a string as it is and a number as written; ok is false
// for any other value.
func (p *t2iParser) scalar(x *fastjson.Value) (string, bool) {
	switch x.Type() {
	case fastjson.TypeString:
		return string(x.GetStringBytes()), true
	case fastjson.TypeNumber:
		p.num = x.MarshalTo(p.num[:0])
		return string(p.num), true
	}
	return "", false
}

// names reads a list of adapter names (strings or numbers); null or an
// absent key is no adapter.
func (p *t2iParser) names(v *fastjson.Value, key string, dst []string) ([]string, error) {
	dst = dst[:0]
	x := v.Get(key)
	if x == nil || x.Type() == fastjson.TypeNull {
		return dst, nil
	}
	arr, err := x.Array()
	if err != nil {
		return dst, errors.New("want a list of names or null")
	}
	for j, e := range arr {
		name, ok := p.scalar(e)
		if !ok {
			return dst, fmt.Errorf("element %d: want a name (string or number), got %s", j, clip(string(e.MarshalTo(nil))))
		}
		dst = append(dst, name)
	}
	return dst, nil
}

// object stores one row (line is where its object starts).
func (p *t2iParser) object(line int, v *fastjson.Value) error {
	t, b := p.t, p.b
	t.Rows++
	r := &p.r
	*r = row{line: line, burst: -1}
	if p.o.Scene != "" {
		if sc, _ := p.text(v, t2iScene); !strings.EqualFold(trimSpace(sc), strings.TrimSpace(p.o.Scene)) {
			t.Skipped.Scene++
			return nil
		}
	}
	ts, ok := p.text(v, p.ts)
	if !ok {
		if x := v.Get(p.ts); x != nil && x.Type() != fastjson.TypeNull {
			return b.skip(line, p.ts, errors.New("want a number"))
		}
		return b.skip(line, p.ts, errMissing)
	}
	at, err := parseTimestamp(ts, p.unit)
	if err != nil {
		return b.skip(line, p.ts, err)
	}
	r.at = at
	m, _ := p.text(v, p.model)
	if r.model = trimSpace(m); r.model == "" {
		return b.skip(line, p.model, errEmpty)
	}
	if p.loraNames, err = p.names(v, t2iLoRAs, p.loraNames); err != nil {
		return b.skip(line, t2iLoRAs, err)
	}
	if p.cnetNames, err = p.names(v, t2iControlNets, p.cnetNames); err != nil {
		return b.skip(line, t2iControlNets, err)
	}
	r.gen = genRow{images: 1, loras: p.loraNames, controlnets: p.cnetNames}
	if field, err := r.gen.check(); err != nil {
		return b.skip(line, field, err)
	}
	r.instance, _ = p.text(v, t2iIP)
	return b.add(r)
}

// readJSONArray reads a trace written as one JSON array of objects (the
// text-to-image trace), streaming it element by element.
func readJSONArray(br *bufio.Reader, t *Trace, o *Options) error {
	if o.Format != FormatAuto && o.Format != AlibabaT2I {
		return fmt.Errorf("replay: %s: --trace-format %s does not read a JSON array", t.Path, o.Format)
	}
	sc := arrayScanner{br: br, line: 1}
	if err := sc.open(); err != nil {
		return fmt.Errorf("replay: %s: line %d: %w", t.Path, sc.line, err)
	}
	var p *t2iParser
	var jp fastjson.Parser
	for {
		raw, line, tooLong, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("replay: %s: line %d: %w", t.Path, sc.line, err)
		}
		v, perr := jp.ParseBytes(raw)
		if p == nil {
			if o.Format == FormatAuto && (perr != nil || v.Type() != fastjson.TypeObject || !isT2IObject(v)) {
				return fmt.Errorf("replay: %s: a JSON array is read only as the Alibaba text-to-image trace (objects with %s, %s, %s); convert other arrays to JSON Lines (jq -c '.[]' FILE > FILE.jsonl)",
					t.Path, t2iTS, t2iModel, t2iLoRAs)
			}
			p = newT2IParser(t, o)
		}
		switch {
		case tooLong:
			t.Rows++
			err = p.b.skip(line, "", errLineTooLong)
		case perr != nil:
			t.Rows++
			err = p.b.skip(line, "", fmt.Errorf("invalid JSON: %s", clip(perr.Error())))
		case v.Type() != fastjson.TypeObject:
			t.Rows++
			err = p.b.skip(line, "", errors.New("not a JSON object"))
		default:
			err = p.object(line, v)
		}
		if errors.Is(err, errEnough) {
			break
		}
		if err != nil {
			return err
		}
	}
	if p == nil { // an empty array
		p = newT2IParser(t, o)
	}
	p.b.finish()
	return nil
}

// arrayScanner splits a JSON array into its elements without decoding
// them, counting lines.
type arrayScanner struct {
	br    *bufio.Reader
	line  int
	buf   []byte
	first bool
	done  bool
}

var errArrayEnd = errors.New("unexpected end of file inside the JSON array (want , or ])")

// skipSpace consumes JSON whitespace; it returns the next byte unread.
func (s *arrayScanner) skipSpace() (byte, error) {
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case '\n':
			s.line++
		case ' ', '\t', '\r':
		default:
			return c, s.br.UnreadByte()
		}
	}
}

// open consumes the opening bracket.
func (s *arrayScanner) open() error {
	c, err := s.skipSpace()
	if err != nil {
		return errors.New("empty file")
	}
	if c != '[' {
		return fmt.Errorf("want a JSON array, got %q", c)
	}
	s.br.ReadByte()
	s.first = true
	return nil
}

// next returns the next element's bytes (cut at maxLineBytes: tooLong) and
// the line it starts on; io.EOF after the closing bracket.
func (s *arrayScanner) next() (raw []byte, line int, tooLong bool, err error) {
	if s.done {
		return nil, 0, false, io.EOF
	}
	c, err := s.skipSpace()
	if err != nil {
		return nil, 0, false, errArrayEnd
	}
	if !s.first {
		s.br.ReadByte()
		switch c {
		case ']':
			return nil, 0, false, s.close()
		case ',':
		default:
			return nil, 0, false, fmt.Errorf("want , or ] after an element, got %q", c)
		}
		if c, err = s.skipSpace(); err != nil {
			return nil, 0, false, errArrayEnd
		}
	} else if c == ']' {
		s.br.ReadByte()
		return nil, 0, false, s.close()
	}
	s.first = false
	line = s.line
	s.buf = s.buf[:0]
	tooLong, err = s.value()
	if err != nil {
		return nil, line, false, err
	}
	return s.buf, line, tooLong, nil
}

// close checks that nothing but space follows the closing bracket.
func (s *arrayScanner) close() error {
	s.done = true
	if c, err := s.skipSpace(); err == nil {
		return fmt.Errorf("data after the end of the JSON array: %q", c)
	}
	return io.EOF
}

// value copies one JSON value into s.buf (up to maxLineBytes), tracking
// strings and nesting; scalars end at a delimiter.
func (s *arrayScanner) value() (tooLong bool, err error) {
	depth := 0
	var str jsonscan.Strings
	put := func(c byte) {
		if len(s.buf) < maxLineBytes {
			s.buf = append(s.buf, c)
		} else {
			tooLong = true
		}
	}
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			if depth == 0 && !str.In() && len(s.buf) > 0 {
				return tooLong, nil // a scalar at the end: the caller finds no ]
			}
			return tooLong, errArrayEnd
		}
		if c == '\n' {
			s.line++
		}
		if in, closed := str.Step(c); in {
			put(c)
			if closed && depth == 0 {
				return tooLong, nil
			}
			continue
		}
		switch {
		case c == '{' || c == '[':
			put(c)
			depth++
		case c == '}' || c == ']':
			if depth == 0 { // the array's own bracket ends a scalar
				return tooLong, s.br.UnreadByte()
			}
			put(c)
			depth--
			if depth == 0 {
				return tooLong, nil
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			if c == '\n' {
				s.line--
			}
			return tooLong, s.br.UnreadByte()
		default:
			put(c)
		}
	}
}

// readT2ILines reads the text-to-image trace written as JSON Lines.
func readT2ILines(br *bufio.Reader, t *Trace, o *Options) error {
	p := newT2IParser(t, o)
	return p.b.end(eachJSONObject(br, t, p.b, p.object))
}
