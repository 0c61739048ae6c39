package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/note"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Logger takes the model check's notes and warnings.
type Logger = note.Logger

// ModelsTimeout bounds the model list asked for before a run.
const ModelsTimeout = 30 * time.Second

// Check asks every endpoint for its models before the schedule is built: a
// server nobody answers for, or one that does not serve model, is an error
// that names what it serves. With model "" the first listed model is used
// (and set on every client). A server without a model list (404) is warned
// about and passes when model is given. With several endpoints, one that
// does not answer is warned about and kept (its share of the requests
// fails, attributed to it: Live reports false for it); the check fails only
// when none answers. It returns the model and the listed models whose
// context length may bound the requests (nil when no endpoint lists any).
func (p *Pool) Check(ctx context.Context, model string, log Logger) (string, []ModelInfo, error) {
	several := len(p.clients) > 1
	type answer struct {
		models []ModelInfo
		noList bool // the endpoint has no model list (404): the model is not checked there
	}
	answers := make([]*answer, len(p.clients))
	var firstDown error
	for i, cli := range p.clients {
		models, err := listModels(ctx, model, cli, p.urls[i], i, several, log)
		var down *downError
		switch {
		case errors.As(err, &down) && several:
			log.Warnf("endpoint %d (%s) does not answer: %s; it is kept, and the requests it is given will fail", i+1, urlHost(p.urls[i]), down.Msg)
			if firstDown == nil {
				firstDown = err
			}
			continue
		case errors.Is(err, errNoList):
			answers[i] = &answer{noList: true}
			continue
		case err != nil:
			return model, nil, err
		}
		answers[i] = &answer{models: models}
	}
	live := 0
	for i, a := range answers {
		p.live[i] = a != nil
		if a != nil {
			live++
		}
	}
	if live == 0 {
		return model, nil, firstDown
	}
	if model == "" {
		for i, a := range answers {
			if a == nil || len(a.models) == 0 {
				continue
			}
			model = a.models[0].ID
			if several {
				log.Infof("model: %s (first of /v1/models at endpoint %d)", model, i+1)
			} else {
				log.Infof("model: %s (first of /v1/models)", model)
			}
			p.SetModel(model)
			break
		}
		if model == "" {
			if several {
				return "", nil, errors.New("no --model given and no endpoint lists one")
			}
			return "", nil, errors.New("no --model given and the server lists no model")
		}
	}
	var all []ModelInfo
	for i, a := range answers {
		if a == nil || a.noList {
			continue
		}
		ids := make([]string, len(a.models))
		for k, m := range a.models {
			ids[k] = m.ID
		}
		if !slices.Contains(ids, model) {
			if several {
				return model, nil, fmt.Errorf("--model %s is not served at endpoint %d (%s); it serves %s", model, i+1, urlHost(p.urls[i]), modelList(ids))
			}
			return model, nil, fmt.Errorf("--model %s is not served at %s; it serves %s", model, urlHost(p.urls[i]), modelList(ids))
		}
		all = append(all, a.models...)
	}
	return model, all, nil
}

// downError is an endpoint's model check that got no answer (connect or
// timeout).
type downError struct {
	error
	Msg string
}

func (e *downError) Unwrap() error { return e.error }

// errNoList is an endpoint without a model list (it answered 404) when the
// model is given: it runs with a warning.
var errNoList = errors.New("no model list")

// listModels asks one endpoint (number i from 0, of several or not) for
// its models. A server that does not answer is a *downError; one without a
// model list is errNoList when model is given (warned about).
func listModels(ctx context.Context, model string, cli *Client, base string, i int, several bool, log Logger) ([]ModelInfo, error) {
	lctx, cancel := context.WithTimeout(ctx, ModelsTimeout)
	defer cancel()
	models, err := cli.ListModels(lctx)
	var me *ModelsError
	switch {
	case err == nil:
		return models, nil
	case ctx.Err() != nil:
		return nil, err
	case errors.As(err, &me) && me.Status == 0 && me.Class == record.ErrConnect:
		if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
			return nil, &downError{fmt.Errorf("cannot reach the server at %s: is the server up? (%s)", urlHost(base), me.Msg), me.Msg}
		}
		return nil, &downError{fmt.Errorf("cannot connect to the server at %s (connect: %s)", urlHost(base), me.Msg), me.Msg}
	case errors.As(err, &me) && me.Status == 0 && me.Class == record.ErrTimeout:
		return nil, &downError{fmt.Errorf("the server at %s did not answer for its model list within %v: is it up? (%s)", urlHost(base), ModelsTimeout, me.Msg), me.Msg}
	case errors.As(err, &me) && me.NoEndpoint() && model != "":
		if several {
			log.Warnf("endpoint %d has no model list (%s answers %d): --model %s is not checked there", i+1, me.URL, me.Status, model)
		} else {
			log.Warnf("the server has no model list (%s answers %d): --model %s is not checked", me.URL, me.Status, model)
		}
		return nil, errNoList
	case model == "":
		return nil, fmt.Errorf("no --model given and the server did not list one: %w", err)
	}
	return nil, fmt.Errorf("%w (a server without a model list, answering 404, runs with a warning)", err)
}

// modelList names the served models (at most 10).
func modelList(ids []string) string {
	if len(ids) == 0 {
		return "no model"
	}
	if len(ids) > 10 {
		return fmt.Sprintf("%d models: %s, …", len(ids), strings.Join(ids[:10], ", "))
	}
	return strings.Join(ids, ", ")
}
