package engine

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/recipe"
)

// The scheduler is one goroutine that owns every admitted request. Each
// step it picks work from many requests, the runner computes it, and the
// step's results flow to the outputs:
//
//   - Vision: images that no cache holds are packed, across requests, into
//     one vision pass of at most MaxEncoderBatch merged tokens. The pass
//     runs a few stages (layers) per step, so a batch of large images never
//     holds the model for more than about one step. An image in flight is
//     encoded once however many requests wait for it.
//   - Language model: sequences whose images are ready advance in one
//     packed pass. A sequence longer than what the step has left is cut
//     (chunked prefill: the model keeps the keys and values of its earlier
//     chunks, the output keeps pooling sums), so any input fits any step.
//   - Fairness and the fast lane: short requests (at most FastLaneTokens
//     tokens left, images ready) go first and whole; the rest advance round
//     robin, one sequence chunk per request per round, so a 2000-input
//     request does not starve a 1-input one. A step sized for bulk work
//     takes about StepTarget; when short requests wait, the step carries
//     them with a reduced share of bulk work, and no vision stage.
//   - Cancellation: a request whose context ended leaves at the next step
//     boundary; its sequences' state is dropped and images that nobody else
//     waits for leave the vision queue.
//
// Step sizes follow a cost model learned from the steps themselves:
// seconds per language-model token and per patch-stage of vision, so that
// the same StepTarget suits a tiny model and a 3B one.

// request is an admitted request in the scheduler.
type request struct {
	ctx     context.Context
	pr      *prepared
	seqs    []*seqJob
	left    int // sequences not finished
	tokens  int // LM tokens not computed yet
	done    chan error
	arrived time.Time
	started bool
	trace   bool
	tracer  Tracer
	// admTokens is what admission counted, given back when it leaves.
	admTokens int
	finished  bool
	// arriving: the request counts in Engine.arriving until the scheduler
	// receives it.
	arriving bool
}

// seqJob is one input that needs the language model.
type seqJob struct {
	req     *request
	in      *input
	waiting int // images not encoded yet
	state   model.State
	out     *pooler
	// lead is the identical sequence in flight this one takes its result
	// from; followers are those waiting on this one.
	lead      *seqJob
	followers []*seqJob
	// encodeOnly: the job only waits for its images (EncodeImages) and
	// is done once they are encoded.
	encodeOnly bool
}

func (s *seqJob) left() int {
	if s.state == nil {
		return len(s.in.prompt.IDs)
	}
	return s.state.Len() - s.state.Done()
}

// encodeJob is one image (by content key) waiting for the vision tower.
type encodeJob struct {
	key     Key
	img     model.ImageInput
	tokens  int
	waiters []encWaiter
	inPass  bool
	trace   bool
}

type encWaiter struct {
	seq *seqJob
	im  *imageItem
}

type visionRun struct {
	pass model.VisionPass
	jobs []*encodeJob
}

type scheduler struct {
	e      *Engine
	submit chan *request
	ctrl   chan func()
	stop   chan struct{}
	once   sync.Once
	done   chan struct{}

	reqs     []*request
	rr       int // round-robin start
	encodes  map[Key]*encodeJob
	leaders  map[Key]*seqJob
	encQueue []*encodeJob
	vis      *visionRun

	// Cost model: a language-model pass of m tokens takes about
	// lm.fixed + lm.perToken·m seconds (the fixed part is streaming and
	// decoding every weight once, which dominates short passes); a vision
	// stage takes secPerPatchStage per patch.
	lm               lineFit
	secPerPatchStage float64
	// visionOwed is set when a step skipped pending vision work for short
	// requests: the next step runs a vision stage whatever waits, so that
	// steady query traffic cannot starve the images.
	visionOwed bool
	// wholeOwed is set when a step deferred a sequence of a bidirectional
	// model (which runs whole, in one pass) for short requests: the next
	// step takes it however large, so that queries cannot starve it.
	wholeOwed bool
}

// lineFit fits t = fixed + perToken·m to recent observations by least
// squares with exponential forgetting.
type lineFit struct {
	w, sx, sy, sxx, sxy float64
	fixed, perToken     float64
}

func (f *lineFit) observe(m, t float64) {
	const keep = 0.9
	// A product is converted before it is added to (float64(a*b) + c): that
	// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
	// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
	f.w, f.sx, f.sy = float64(keep*f.w)+1, float64(keep*f.sx)+m, float64(keep*f.sy)+t
	f.sxx, f.sxy = float64(keep*f.sxx)+float64(m*m), float64(keep*f.sxy)+float64(m*t)
	den := float64(f.w*f.sxx) - float64(f.sx*f.sx)
	if den > 1e-9*f.w*f.sxx && f.w > 1.5 {
		b := (float64(f.w*f.sxy) - float64(f.sx*f.sy)) / den
		a := (f.sy - float64(b*f.sx)) / f.w
		if b > 0 && a >= 0 {
			f.fixed, f.perToken = a, b
			return
		}
	}
	// Too few distinct sizes to separate the parts: scale the current
	// model to this observation.
	if pred := f.fixed + float64(f.perToken*m); pred > 0 && t > 0 {
		r := t / pred
		f.fixed *= r
		f.perToken *= r
	}
}

// minStepUse is the smallest share of a bulk step's time spent on its
// tokens rather than on the fixed part (reading and decoding every weight
// once per pass). The fixed part is large on a CPU: on a 2B Q8_0 model
// it measured 0.6s against 14ms per token, where steps that kept it to
// half of the time (about 40 tokens) ran bulk work at half the speed of
// one pass. Three quarters keeps bulk throughput within a quarter of one
// pass's, at the price of steps longer than the target on such models
// (2.4s there).
const minStepUse = 0.75

// budget is the tokens of a pass that takes about target seconds, and at
// least as many as keep the fixed part within 1 − minStepUse of the step.
func (f *lineFit) budget(target float64) int {
	if f.perToken <= 0 {
		return 1 << 30
	}
	floor := math.Ceil(f.fixed * minStepUse / (1 - minStepUse) / f.perToken)
	return int(max((target-f.fixed)/f.perToken, floor))
}

func newScheduler(e *Engine) *scheduler {
	s := &scheduler{e: e, submit: make(chan *request), ctrl: make(chan func()), stop: make(chan struct{}), done: make(chan struct{}), encodes: map[Key]*encodeJob{}, leaders: map[Key]*seqJob{}}
	// Until steps are measured, assume 50 GFLOP/s.
	s.lm.perToken = float64(e.flopsPerToken) / 50e9
	s.secPerPatchStage = float64(e.flopsPerPatchStage) / 50e9
	go s.loop()
	return s
}

func (s *scheduler) loop() {
	defer close(s.done)
	for {
		if len(s.reqs) == 0 {
			select {
			case r := <-s.submit:
				s.admit(r)
				s.gather(s.e.cfg.BatchWait)
			case f := <-s.ctrl:
				f()
			case <-s.stop:
				return
			}
		}
		for drained := false; !drained; {
			select {
			case r := <-s.submit:
				s.admit(r)
			case f := <-s.ctrl:
				f()
			case <-s.stop:
				s.failAll(ErrShuttingDown)
				return
			default:
				drained = true
			}
		}
		s.dropCancelled()
		if len(s.reqs) == 0 {
			continue
		}
		s.step()
	}
}

// gather keeps admitting requests for a short while after an idle
// engine gets one: clients that send at the same moment then share the
// first step instead of waiting behind it. The window closes d after the
// latest arrival, so a burst still arriving is gathered whole, and not
// while requests are inside Embed on their way to the scheduler
// (validated, tokenized, decoded: Engine.arriving), but at most gatherCap
// after the first: a burst split over two passes pays the fixed part of
// a pass (reading every weight) twice, so waiting up to a tenth of it
// costs less than it saves. The faster the kernels, the smaller that
// fixed part and the narrower the window, while the gaps between
// arrivals stay what the HTTP layer and the processor make them: sixteen
// queries sent at once on a busy 2-core machine reached the avx512-vnni
// engine over more than 5 ms and went in two passes.
func (s *scheduler) gather(d time.Duration) {
	if d <= 0 {
		return
	}
	end := time.Now().Add(max(d, s.gatherCap()))
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case r := <-s.submit:
			s.admit(r)
			t.Reset(min(d, time.Until(end)))
		case f := <-s.ctrl:
			f()
		case <-t.C:
			if left := time.Until(end); left > 0 && s.e.arriving.Load() > 0 {
				t.Reset(min(d, left))
				continue
			}
			return
		case <-s.stop:
			return
		}
	}
}

// gatherCap is the longest gather window: a tenth of the measured fixed
// part of a language-model pass.
func (s *scheduler) gatherCap() time.Duration {
	return time.Duration(s.lm.fixed / 10 * float64(time.Second))
}

// admit adds a request: every image of its sequences is attached to an
// encode job (one per content key), and sequences whose images are all
// known get their model state.
func (s *scheduler) admit(r *request) {
	s.e.arrivalOff(r)
	s.reqs = append(s.reqs, r)
	s.e.stats.queued.Add(1)
	for _, sq := range r.seqs {
		if !r.trace && !sq.encodeOnly {
			// An identical input already in flight is computed once: this
			// one follows it and takes its result.
			if lead := s.leaders[sq.in.key]; lead != nil {
				sq.lead = lead
				lead.followers = append(lead.followers, sq)
				continue
			}
			s.leaders[sq.in.key] = sq
		}
		s.attach(sq)
	}
}

// attach queues the images a sequence still needs and makes its state
// when it needs none.
func (s *scheduler) attach(sq *seqJob) {
	r := sq.req
	for _, im := range sq.in.images {
		if im.enc.Rows != nil {
			continue
		}
		sq.waiting++
		j := s.encodes[im.content]
		if j == nil || r.trace || j.trace {
			j = &encodeJob{key: im.content, img: model.ImageInput{Patches: im.patches, GridT: im.grid[0], GridH: im.grid[1], GridW: im.grid[2]}, tokens: im.tokens, trace: r.trace}
			if !r.trace {
				s.encodes[im.content] = j
			}
			s.encQueue = append(s.encQueue, j)
		}
		j.waiters = append(j.waiters, encWaiter{sq, im})
	}
	if sq.waiting == 0 {
		s.ready(sq)
	}
}

// ready makes a sequence's model state once its images are encoded.
func (s *scheduler) ready(sq *seqJob) {
	if sq.encodeOnly {
		s.done1(sq)
		return
	}
	p := sq.in.prompt
	seq := model.Sequence{IDs: p.IDs}
	for k, im := range sq.in.images {
		span := p.Images[k]
		seq.Images = append(seq.Images, model.ImageEmbedding{Rows: im.enc.Rows, Deep: im.enc.Deep, First: span.First, GridT: im.grid[0], GridH: im.grid[1], GridW: im.grid[2]})
	}
	st, err := s.e.model.NewState(seq)
	if err != nil {
		s.finish(sq.req, err)
		return
	}
	sq.state = st
}

// dropCancelled removes requests whose context ended.
func (s *scheduler) dropCancelled() {
	for _, r := range s.reqs {
		if err := r.ctx.Err(); err != nil {
			s.e.stats.cancelled.Add(1)
			s.finish(r, err)
		}
	}
}

// finish ends a request with err (nil: success) and removes it.
func (s *scheduler) finish(r *request, err error) {
	k := -1
	for i, x := range s.reqs {
		if x == r {
			k = i
			break
		}
	}
	if k < 0 || r.finished {
		return
	}
	r.finished = true
	s.reqs = append(s.reqs[:k], s.reqs[k+1:]...)
	if !r.started {
		s.e.stats.queued.Add(-1)
	} else {
		s.e.stats.running.Add(-1)
	}
	for _, sq := range r.seqs {
		if sq.state != nil {
			sq.state.Release()
		}
		s.detach(sq)
		s.unlead(sq)
	}
	r.pr.release(s.e)
	r.done <- err
}

// unlead takes a leaving sequence out of the in-flight dedupe: a follower
// stops following; a leader whose result is not delivered hands the work to
// its first follower, which starts over.
func (s *scheduler) unlead(sq *seqJob) {
	if l := sq.lead; l != nil {
		l.followers = slices.DeleteFunc(l.followers, func(x *seqJob) bool { return x == sq })
		return
	}
	if s.leaders[sq.in.key] != sq {
		return
	}
	delete(s.leaders, sq.in.key)
	if len(sq.followers) == 0 {
		return
	}
	next, rest := sq.followers[0], sq.followers[1:]
	next.lead, next.followers = nil, rest
	for _, f := range rest {
		f.lead = next
	}
	sq.followers = nil
	s.leaders[next.in.key] = next
	s.attach(next)
}

// detach removes a sequence from the encode jobs it waits on; a job left
// without waiters leaves the queue, and a vision pass left without any
// waiter is abandoned.
func (s *scheduler) detach(sq *seqJob) {
	if sq.waiting == 0 {
		return
	}
	for _, im := range sq.in.images {
		for _, j := range s.jobsFor(im) {
			w := j.waiters[:0]
			for _, x := range j.waiters {
				if x.seq != sq {
					w = append(w, x)
				}
			}
			j.waiters = w
			if len(j.waiters) == 0 && !j.inPass {
				s.dropJob(j)
			}
		}
	}
	if s.vis != nil {
		for _, j := range s.vis.jobs {
			if len(j.waiters) > 0 {
				return
			}
		}
		for _, j := range s.vis.jobs {
			s.dropJob(j)
		}
		s.vis = nil
	}
}

// jobsFor lists the queued or running encode jobs of an image.
func (s *scheduler) jobsFor(im *imageItem) []*encodeJob {
	var out []*encodeJob
	for _, j := range s.encQueue {
		if j.key == im.content {
			out = append(out, j)
		}
	}
	if s.vis != nil {
		for _, j := range s.vis.jobs {
			if j.key == im.content {
				out = append(out, j)
			}
		}
	}
	return out
}

func (s *scheduler) dropJob(j *encodeJob) {
	if s.encodes[j.key] == j {
		delete(s.encodes, j.key)
	}
	q := s.encQueue[:0]
	for _, x := range s.encQueue {
		if x != j {
			q = append(q, x)
		}
	}
	s.encQueue = q
}

// failQueued fails, with ErrShuttingDown, the requests no step has
// worked on yet.
func (s *scheduler) failQueued() {
	select {
	case s.ctrl <- func() {
		for _, r := range append([]*request(nil), s.reqs...) {
			if !r.started {
				s.finish(r, ErrShuttingDown)
			}
		}
	}:
	case <-s.done:
	}
}

// shutdown stops the loop; requests still admitted get ErrShuttingDown.
func (s *scheduler) shutdown() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

func (s *scheduler) failAll(err error) {
	for len(s.reqs) > 0 {
		s.finish(s.reqs[0], err)
	}
}

// isShort reports whether a request belongs in the fast lane.
func (s *scheduler) isShort(r *request) bool {
	if r.tokens > s.e.cfg.FastLaneTokens {
		return false
	}
	for _, sq := range r.seqs {
		if sq.waiting > 0 {
			return false
		}
	}
	return true
}

// step plans one step, runs it and delivers its results.
func (s *scheduler) step() {
	e := s.e
	target := e.cfg.StepTarget.Seconds()
	maxTok := e.cfg.MaxBatchTokens
	budget := maxTok
	if bt := s.lm.budget(target); bt < budget {
		budget = max(bt, e.cfg.MinChunk)
	}

	var chunks []model.Chunk
	var jobs []*seqJob
	in := map[*seqJob]bool{}
	used := 0
	add := func(sq *seqJob, n int) {
		chunks = append(chunks, model.Chunk{State: sq.state, N: n})
		jobs = append(jobs, sq)
		in[sq] = true
		used += n
	}
	// Fast lane: short requests whole, oldest first.
	short := false
	for _, r := range s.reqs {
		if !s.isShort(r) {
			continue
		}
		for _, sq := range r.seqs {
			if sq.state != nil && sq.left() > 0 && used+sq.left() <= maxTok {
				add(sq, sq.left())
				short = true
			}
		}
	}
	bulk := budget - used
	if short {
		// The short requests' step takes little bulk work beside them.
		bulk = min(bulk, budget/4)
	}
	// Bulk: round robin over requests, one chunk of one sequence each. A
	// bidirectional model's sequences are never cut (no cache of earlier
	// chunks can stand for keys that come later): one that does not fit
	// what the step has left waits, unless it is the step's first bulk
	// work, when it runs whole beyond the step's budget (it is at most
	// MaxBatchTokens, the engine's one-pass limit). Beside short requests
	// it waits one step, holding its place in the round, and then runs.
	whole := e.mi.Bidirectional
	bulkAdded, deferred := false, false
	rr := s.rr
	oversize := func() bool { return whole && !bulkAdded && (!short || s.wholeOwed) }
	for progress := true; progress && (bulk > 0 || oversize()); {
		progress = false
		n := len(s.reqs)
		for k := 0; k < n && (bulk > 0 || oversize()); k++ {
			r := s.reqs[(rr+k)%n]
			for _, sq := range r.seqs {
				if sq.state == nil || in[sq] || sq.left() == 0 {
					continue
				}
				c := min(sq.left(), max(bulk, 0))
				if whole && c < sq.left() {
					if !oversize() || used+sq.left() > maxTok {
						if !bulkAdded && !deferred {
							deferred = true
							s.rr = (rr + k) % n
						}
						break
					}
					c = sq.left()
				}
				if c < sq.left() && c < e.cfg.MinChunk {
					break
				}
				add(sq, c)
				bulk -= c
				bulkAdded, progress = true, true
				break
			}
		}
	}
	if len(s.reqs) > 0 && !deferred {
		s.rr = (s.rr + 1) % len(s.reqs)
	}
	s.wholeOwed = deferred

	// Vision: advance the current pass, or start one. A step carrying
	// short requests skips it, unless the step before did too.
	skip := short && len(chunks) > 0 && !s.visionOwed
	pending := s.vis != nil || len(s.encQueue) > 0
	s.visionOwed = skip && pending
	if s.vis == nil && len(s.encQueue) > 0 && !skip {
		s.startPass()
	}
	stages := 0
	if s.vis != nil && short && !skip {
		stages = 1
	} else if s.vis != nil && !skip {
		p := s.vis.pass
		per := s.secPerPatchStage * float64(p.Patches())
		left := target - float64(float64(used)*s.lm.perToken) - s.lm.fixed
		stages = max(1, int(left/per))
		if len(chunks) == 0 {
			stages = max(1, int(target/per))
		}
	}
	if len(chunks) == 0 && stages == 0 {
		return
	}
	for _, sq := range jobs {
		if !sq.req.started {
			sq.req.started = true
			e.stats.queued.Add(-1)
			e.stats.running.Add(1)
			e.stats.queueSeconds.observe(time.Since(sq.req.arrived).Seconds())
		}
	}
	t0 := time.Now()
	if stages > 0 {
		s.runVision(stages)
	}
	t1 := time.Now()
	if len(chunks) > 0 {
		s.runLM(chunks, jobs, used)
	}
	t2 := time.Now()
	e.stats.steps.Add(1)
	e.stats.stepSeconds.observe(t2.Sub(t0).Seconds())
	if used > 0 {
		e.stats.stepTokens.observe(float64(used))
		s.lm.observe(float64(used), t2.Sub(t1).Seconds())
	}
}

func ewma(old, x float64) float64 {
	if x <= 0 {
		return old
	}
	return float64(0.7*old) + float64(0.3*x)
}

// startPass packs queued images into one vision pass.
func (s *scheduler) startPass() {
	var jobs []*encodeJob
	var imgs []model.ImageInput
	tokens := 0
	rest := s.encQueue[:0]
	for _, j := range s.encQueue {
		if len(jobs) > 0 && (tokens+j.tokens > s.e.cfg.MaxEncoderBatch || j.trace || jobs[0].trace) {
			rest = append(rest, j)
			continue
		}
		jobs = append(jobs, j)
		imgs = append(imgs, j.img)
		tokens += j.tokens
		j.inPass = true
	}
	s.encQueue = rest
	pass, err := s.e.model.NewVisionPass(imgs, jobs[0].trace)
	if err != nil {
		s.failJobs(jobs, err)
		return
	}
	s.vis = &visionRun{pass: pass, jobs: jobs}
}

func (s *scheduler) failJobs(jobs []*encodeJob, err error) {
	for _, j := range jobs {
		s.dropJob(j)
		for _, w := range slices.Clone(j.waiters) {
			s.finish(w.seq.req, err)
		}
	}
}

// runVision advances the current pass and, when it ends, hands every image
// its rows.
func (s *scheduler) runVision(stages int) {
	e := s.e
	v := s.vis
	t0 := time.Now()
	if err := e.runner.vision(v.pass, stages); err != nil {
		s.vis = nil
		s.failJobs(v.jobs, err)
		return
	}
	e.stats.stepPatches.observe(float64(v.pass.Patches() * stages))
	s.secPerPatchStage = ewma(s.secPerPatchStage, time.Since(t0).Seconds()/float64(v.pass.Patches()*stages))
	if !v.pass.Done() {
		return
	}
	s.vis = nil
	res := v.pass.Result()
	vit := v.pass.VitOut()
	for i, j := range v.jobs {
		s.dropJob(j)
		e.stats.images.Add(1)
		e.stats.patches.Add(int64(len(j.img.Patches) / max(e.patchVals, 1)))
		enc := res[i]
		if !j.trace {
			e.storeEncoded(j.key, enc)
		}
		for _, w := range slices.Clone(j.waiters) {
			if w.seq.req.finished {
				continue
			}
			w.im.enc = enc
			w.im.patches = nil
			e.freeBudget(w.im)
			if tr := w.seq.req.tracer; tr != nil {
				var out []float32
				if i < len(vit) {
					out = vit[i]
				}
				if err := e.traceVision(tr, w.seq.in, w.im, out); err != nil {
					s.finish(w.seq.req, err)
					continue
				}
			}
			if w.seq.waiting--; w.seq.waiting == 0 {
				s.ready(w.seq)
			}
		}
	}
}

// runLM runs one language-model pass and feeds the outputs.
func (s *scheduler) runLM(chunks []model.Chunk, jobs []*seqJob, used int) {
	e := s.e
	starts := make([]int, len(chunks))
	for i, c := range chunks {
		starts[i] = c.State.Done()
	}
	hidden, err := e.runner.lm(chunks)
	if err != nil {
		for _, sq := range jobs {
			s.finish(sq.req, err)
		}
		return
	}
	e.stats.lmTokens.Add(int64(used))
	for i, sq := range jobs {
		if sq.req.finished {
			continue
		}
		sq.req.tokens -= chunks[i].N
		if sq.out == nil {
			sq.out = e.newPooler(sq)
		}
		sq.out.add(hidden[i], starts[i])
		if sq.state.Done() < sq.state.Len() {
			continue
		}
		r := sq.out.result()
		if !sq.req.trace {
			e.storeEmbedding(sq.in.key, r)
		}
		sq.req.pr.results[sq.in.index] = r
		if tr := sq.req.tracer; tr != nil {
			if err := e.traceHidden(tr, sq.in, sq.out.keep); err != nil {
				s.finish(sq.req, err)
				continue
			}
		}
		if s.leaders[sq.in.key] == sq {
			delete(s.leaders, sq.in.key)
		}
		followers := sq.followers
		sq.followers = nil
		s.done1(sq)
		for _, f := range followers {
			f.lead = nil
			if !f.req.finished {
				f.req.pr.results[f.in.index] = r
				f.req.tokens -= len(f.in.prompt.IDs)
				s.done1(f)
			}
		}
	}
}

// done1 counts one finished sequence of its request.
func (s *scheduler) done1(sq *seqJob) {
	if sq.req.left--; sq.req.left == 0 {
		s.finish(sq.req, nil)
	}
}

func (e *Engine) newPooler(sq *seqJob) *pooler {
	var spans [][2]int
	if sq.req.pr.o.perSpan && len(sq.in.images) > 0 && !sq.req.pr.o.multi {
		for _, sp := range sq.in.prompt.Images {
			spans = append(spans, [2]int{sp.VisionStart, sp.VisionEnd + 1})
		}
	}
	var mv = e.mv
	if !sq.req.pr.o.multi {
		mv = nil
	}
	pool := sq.in.pool
	if pool.Kind == recipe.Mean && pool.Hi > len(sq.in.prompt.IDs) {
		pool.Hi = len(sq.in.prompt.IDs)
	}
	p := newPooler(e.info.Hidden, len(sq.in.prompt.IDs), pool, spans, mv, sq.req.trace)
	if mv != nil {
		p.rowsOf = sq.in.keep
	}
	return p
}
