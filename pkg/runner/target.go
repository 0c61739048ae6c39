package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// modelsTimeout bounds the model list asked for before the run.
const modelsTimeout = 30 * time.Second

// checkTarget asks every endpoint for its models before the schedule is
// built: a server nobody answers for, or one that does not serve --model,
// stops the run here (naming what it serves). Without --model the first
// listed model is used. A server without a model list (404) runs with a
// warning when --model is given. The same lists give the token limit
// (setServerLimit: the smallest of the endpoints'). With several
// endpoints, one that does not answer is warned about and kept (its share
// of the requests fails, attributed to it); the run stops only when none
// answers.
func checkTarget(ctx context.Context, o *Options, eps *endpoints, log *logger) error {
	urls := o.endpointURLs()
	several := len(urls) > 1
	type answer struct {
		models []client.ModelInfo
		noList bool // the endpoint has no model list (404): --model is not checked there
	}
	answers := make([]*answer, len(urls))
	var firstDown error
	for i, cli := range eps.clients {
		models, err := listModels(ctx, o, cli, urls[i], i, several, log)
		var down *downError
		switch {
		case errors.As(err, &down) && several:
			log.Warnf("endpoint %d (%s) does not answer: %s; it is kept, and the requests it is given will fail", i+1, hostPort(urls[i]), down.Msg)
			if firstDown == nil {
				firstDown = err
			}
			continue
		case errors.Is(err, errNoList):
			answers[i] = &answer{noList: true}
			continue
		case err != nil:
			return err
		}
		answers[i] = &answer{models: models}
	}
	for i, a := range answers {
		eps.live[i] = a != nil
	}
	live := 0
	for _, a := range answers {
		if a != nil {
			live++
		}
	}
	if live == 0 {
		return firstDown
	}
	if o.Model == "" {
		for i, a := range answers {
			if a == nil || len(a.models) == 0 {
				continue
			}
			o.Model = a.models[0].ID
			if several {
				log.Infof("model: %s (first of /v1/models at endpoint %d)", o.Model, i+1)
			} else {
				log.Infof("model: %s (first of /v1/models)", o.Model)
			}
			eps.setModel(o.Model)
			break
		}
		if o.Model == "" {
			if several {
				return errors.New("no --model given and no endpoint lists one")
			}
			return errors.New("no --model given and the server lists no model")
		}
	}
	var all []client.ModelInfo
	limitOnly := true
	for i, a := range answers {
		if a == nil || a.noList {
			continue
		}
		ids := make([]string, len(a.models))
		for k, m := range a.models {
			ids[k] = m.ID
		}
		if !slices.Contains(ids, o.Model) {
			if several {
				return fmt.Errorf("--model %s is not served at endpoint %d (%s); it serves %s", o.Model, i+1, hostPort(urls[i]), modelList(ids))
			}
			return fmt.Errorf("--model %s is not served at %s; it serves %s", o.Model, hostPort(urls[i]), modelList(ids))
		}
		all = append(all, a.models...)
		limitOnly = false
	}
	if limitOnly {
		all = nil
	}
	setServerLimit(o, all, log)
	return nil
}

// downError is an endpoint's model check that got no answer (connect or
// timeout).
type downError struct {
	error
	Msg string
}

func (e *downError) Unwrap() error { return e.error }

// errNoList is an endpoint without a model list (it answered 404) when
// --model is given: it runs with a warning.
var errNoList = errors.New("no model list")

// listModels asks one endpoint (number i from 0, of several or not) for
// its models. A server that does not answer is a *downError; one without a
// model list is errNoList when --model is given (warned about).
func listModels(ctx context.Context, o *Options, cli *client.Client, base string, i int, several bool, log *logger) ([]client.ModelInfo, error) {
	lctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	models, err := cli.ListModels(lctx)
	var me *client.ModelsError
	switch {
	case err == nil:
		return models, nil
	case ctx.Err() != nil:
		return nil, err
	case errors.As(err, &me) && me.Status == 0 && me.Class == client.ErrConnect:
		if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
			return nil, &downError{fmt.Errorf("cannot reach the server at %s: is the server up? (%s)", hostPort(base), me.Msg), me.Msg}
		}
		return nil, &downError{fmt.Errorf("cannot connect to the server at %s (connect: %s)", hostPort(base), me.Msg), me.Msg}
	case errors.As(err, &me) && me.Status == 0 && me.Class == client.ErrTimeout:
		return nil, &downError{fmt.Errorf("the server at %s did not answer for its model list within %v: is it up? (%s)", hostPort(base), modelsTimeout, me.Msg), me.Msg}
	case errors.As(err, &me) && me.NoEndpoint() && o.Model != "":
		if several {
			log.Warnf("endpoint %d has no model list (%s answers %d): --model %s is not checked there", i+1, me.URL, me.Status, o.Model)
		} else {
			log.Warnf("the server has no model list (%s answers %d): --model %s is not checked", me.URL, me.Status, o.Model)
		}
		return nil, errNoList
	case o.Model == "":
		return nil, fmt.Errorf("no --model given and the server did not list one: %w", err)
	}
	return nil, fmt.Errorf("%w (a server without a model list, answering 404, runs with a warning)", err)
}

// hostPort is base's host and port, without a password or path.
func hostPort(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Host
	}
	return base
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

// tokenLimit is the most tokens (input plus output) one request may have,
// and where that limit comes from: --max-model-len, else the served
// model's max_model_len (serverLimit), else replay.DefaultTokenLimit. The
// schedule is built with it, so a request above it is never built: trace
// rows are left out and counted, length flags are a usage error.
func (o *Options) tokenLimit() (int, string) {
	switch {
	case o.MaxModelLen > 0:
		return o.MaxModelLen, "--max-model-len"
	case o.serverLimit > 0:
		return o.serverLimit, o.serverLimitFrom
	}
	return replay.DefaultTokenLimit, "the built-in cap"
}

// setServerLimit takes the served model's max_model_len from the server's
// model list as the token limit, when --max-model-len is not given: that
// of --model, else (no --model, or one the list does not name) the
// smallest listed, which holds for every model. It says which limit holds.
func setServerLimit(o *Options, models []client.ModelInfo, log *logger) {
	if o.MaxModelLen == 0 {
		var from string
		exact := false // the limit is --model's own
		for _, m := range models {
			if m.MaxModelLen == 0 {
				continue
			}
			if m.ID == o.Model {
				// Several endpoints list --model: the smallest limit holds.
				if !exact || m.MaxModelLen < o.serverLimit {
					o.serverLimit, from = m.MaxModelLen, m.ID
				}
				exact = true
				continue
			}
			if exact {
				continue
			}
			if o.serverLimit == 0 || m.MaxModelLen < o.serverLimit || (m.MaxModelLen == o.serverLimit && m.ID < from) {
				o.serverLimit, from = m.MaxModelLen, m.ID
			}
		}
		if o.serverLimit > 0 {
			o.serverLimitFrom = fmt.Sprintf("the server's max_model_len for %s", from)
		}
	}
	n, how := o.tokenLimit()
	log.Infof("token limit: %d tokens a request (input + output; %s)", n, how)
}
