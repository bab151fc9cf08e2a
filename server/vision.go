package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/visionsvc"
)

// VisionEncoder is the vision encoder a server offers other replicas
// (vembed serve --role encoder); *engine.Engine implements it.
type VisionEncoder interface {
	EncodeImages(ctx context.Context, vision visionsvc.Key, items []visionsvc.Item) ([]visionsvc.Result, error)
}

// optionalRouteDocs describes, for the OpenAPI document, routes that only
// some servers register.
var optionalRouteDocs = map[string]struct {
	summary string
	request string
}{
	"POST " + visionsvc.Path: {"Vision encoder for other replicas: content keys or patches in, merger rows out (binary; see package visionsvc)", ""},
}

// registerVision adds the encoder route when Options.Vision is set.
func (h *Handler) registerVision() {
	if h.opts.Vision != nil {
		h.handle("POST "+visionsvc.Path, h.visionEncode)
	}
}

// visionEncode is POST /v1/vision/encode: the wire format of package
// visionsvc in and out, errors in the API's JSON shape.
func (h *Handler) visionEncode(w http.ResponseWriter, r *http.Request) {
	req, err := visionsvc.ReadRequest(r.Body, r.Header.Get("Content-Encoding"), h.opts.MaxBodyBytes)
	if err != nil {
		var tl *visionsvc.TooLargeError
		if errors.As(err, &tl) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "body_too_large", err.Error())
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "invalid_frame", err.Error())
		return
	}
	release, ok := h.admit(w)
	if !ok {
		return
	}
	defer release()
	ctx, cancel := h.deadline(r.Context())
	defer cancel()
	res, err := h.opts.Vision.EncodeImages(ctx, req.Vision, req.Items)
	if errors.Is(err, engine.ErrOtherVision) {
		writeError(w, http.StatusConflict, "invalid_request_error", "", "other_vision_tower", err.Error())
		return
	}
	if err != nil {
		h.writeEngineError(w, r, err)
		return
	}
	found := 0
	for _, x := range res {
		if x.Found {
			found++
		}
	}
	logAttrs(w, "images", len(req.Items), "found", found, "kind", fmt.Sprintf("%c", req.Kind))
	w.Header().Set("Content-Type", visionsvc.MediaType)
	w.WriteHeader(http.StatusOK)
	w.Write(visionsvc.AppendResponse(nil, res))
}
