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

// checkTarget asks the server for its models before the schedule is
// built: a server nobody answers for, or one that does not serve --model,
// stops the run here (naming what it serves). Without --model the first
// listed model is used. A server without a model list (404) runs with a
// warning when --model is given. The same list gives the token limit
// (setServerLimit).
func checkTarget(ctx context.Context, o *Options, cli *client.Client, log *logger) error {
	lctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	models, err := cli.ListModels(lctx)
	var me *client.ModelsError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return err
	case errors.As(err, &me) && me.Status == 0 && me.Class == client.ErrConnect:
		if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
			return fmt.Errorf("cannot reach the server at %s: is the server up? (%s)", hostPort(o.baseURL()), me.Msg)
		}
		return fmt.Errorf("cannot connect to the server at %s (connect: %s)", hostPort(o.baseURL()), me.Msg)
	case errors.As(err, &me) && me.Status == 0 && me.Class == client.ErrTimeout:
		return fmt.Errorf("the server at %s did not answer for its model list within %v: is it up? (%s)", hostPort(o.baseURL()), modelsTimeout, me.Msg)
	case errors.As(err, &me) && me.NoEndpoint() && o.Model != "":
		log.Warnf("the server has no model list (%s answers %d): --model %s is not checked", me.URL, me.Status, o.Model)
		setServerLimit(o, nil, log)
		return nil
	case o.Model == "":
		return fmt.Errorf("no --model given and the server did not list one: %w", err)
	default:
		return fmt.Errorf("%w (a server without a model list, answering 404, runs with a warning)", err)
	}
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	switch {
	case len(ids) == 0 && o.Model == "":
		return errors.New("no --model given and the server lists no model")
	case o.Model == "":
		o.Model = ids[0]
		log.Infof("model: %s (first of /v1/models)", o.Model)
		cli.SetModel(o.Model)
	case !slices.Contains(ids, o.Model):
		return fmt.Errorf("--model %s is not served at %s; it serves %s", o.Model, hostPort(o.baseURL()), modelList(ids))
	}
	setServerLimit(o, models, log)
	return nil
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
		for _, m := range models {
			if m.MaxModelLen == 0 {
				continue
			}
			if m.ID == o.Model {
				o.serverLimit, from = m.MaxModelLen, m.ID
				break
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
