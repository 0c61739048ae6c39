package prompt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Conversations are a dataset's multi-turn conversations (--multi-turn):
// for each usable entry, in the order and with the skip rules of
// LoadDataset (so conversation i is the one whose first message is
// Dataset.Prompts[i]), its exchanges after the first: a user message and
// the length of the reply that followed it, in words.
type Conversations struct {
	Later [][]Exchange
	tok   Tokens // nil: messages are cut in words
}

// Exchange is one user message of a conversation and the length of the
// reply to it, in the unit of the Sizing the conversations were read with
// (words without one).
type Exchange struct {
	User    string
	UserLen int
	Reply   int
}

// Len is the number of conversations.
func (c *Conversations) Len() int { return len(c.Later) }

// Of returns the exchanges after the first of conversation i mod Len (the
// conversation whose first message a prompt of index i uses).
func (c *Conversations) Of(i int64) []Exchange {
	k := i % int64(len(c.Later))
	if k < 0 {
		k += int64(len(c.Later))
	}
	return c.Later[k]
}

// LoadConversations reads the later exchanges of a dataset file of kind
// "sharegpt" (messages alternate: user, reply, user, reply…; an exchange
// whose user message is empty or has no reply ends the conversation) or
// "sharegpt_pre" (one exchange per entry: none after the first).
func LoadConversations(path, kind string) (*Conversations, error) {
	return LoadConversationsSized(path, kind, Sizing{})
}

// LoadConversationsSized is LoadConversations with the messages and
// replies counted as sz says.
func LoadConversationsSized(path, kind string, sz Sizing) (*Conversations, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	c, err := ReadConversationsSized(f, kind, sz)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return c, nil
}

// ReadConversations is LoadConversations on a reader.
func ReadConversations(r io.Reader, kind string) (*Conversations, error) {
	return ReadConversationsSized(r, kind, Sizing{})
}

// ReadConversationsSized is ReadConversations with the messages and
// replies counted as sz says.
func ReadConversationsSized(r io.Reader, kind string, sz Sizing) (*Conversations, error) {
	c := &Conversations{tok: sz.Tokens}
	text := 0
	err := eachEntry(r, func(e *datasetEntry, at entryAt) (bool, error) {
		if kind == "sharegpt_pre" {
			// The same entries ReadDataset keeps, each a conversation of
			// one exchange.
			if _, ok := e.preOutput(); ok {
				c.Later = append(c.Later, nil)
			}
			return false, nil
		}
		conv := e.conversation()
		if len(conv) < 2 || strings.TrimSpace(conv[0].Value) == "" {
			return false, nil // ReadDataset skips it too
		}
		var later []Exchange
		for j := 2; j+1 < len(conv); j += 2 {
			if CountWords(conv[j].Value) == 0 {
				break
			}
			user, err := sz.count(conv[j].Value)
			if err != nil {
				return false, at.errorf("message %d: %v", j, err)
			}
			reply, err := sz.count(conv[j+1].Value)
			if err != nil {
				return false, at.errorf("message %d: %v", j+1, err)
			}
			later = append(later, Exchange{User: conv[j].Value, UserLen: user, Reply: max(reply, 1)})
			if text += len(conv[j].Value); text > maxDatasetText {
				return false, at.errorf("the conversations kept so far exceed %d MiB of text (the limit of a dataset): use a smaller file", maxDatasetText>>20)
			}
		}
		c.Later = append(c.Later, later)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if len(c.Later) == 0 {
		return nil, errors.New("no usable conversations (entries need two conversation turns, or input_text)")
	}
	return c, nil
}

// AppendConversationText appends exchange j (0: the first after the
// conversation's opening message) of conversation i's user message,
// trimmed or repeated to n words (tokens with a tokenizer) and
// JSON-escaped, without quotes.
func (c *Conversations) AppendConversationText(dst []byte, i int64, j, n int) []byte {
	ex := c.Of(i)
	if j < 0 || j >= len(ex) {
		return dst
	}
	d := Dataset{Prompts: []string{ex[j].User}, Inputs: []int{ex[j].UserLen}, tok: c.tok}
	return d.appendText(dst, 0, n)
}
