package prompt

// vocabulary holds common English words that are one token each, with a
// leading space, in the GPT-2, Llama, Mistral and Qwen tokenizers; a
// synthetic text prompt of N of them is close to N tokens on a real server
// and exactly N on the built-in one, which counts words.
var vocabulary = []string{
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
	"not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they",
	"you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more",
	"when", "will", "would", "who", "so", "no", "time", "people", "year", "way", "day", "man", "thing",
	"woman", "life", "child", "world", "school", "state", "family", "student", "group", "country",
	"problem", "hand", "part", "place", "case", "week", "company", "system", "program", "question",
	"work", "government", "number", "night", "point", "home", "water", "room", "mother", "area",
	"money", "story", "fact", "month", "lot", "right", "study", "book", "eye", "job", "word",
	"business", "issue", "side", "kind", "head", "house", "service", "friend", "father", "power",
	"hour", "game", "line", "end", "member", "law", "car", "city", "community", "name", "president",
	"team", "minute", "idea", "body", "information", "back", "parent", "face", "level", "office",
	"door", "health", "person", "art", "war", "history", "party", "result", "change", "morning",
	"reason", "research", "girl", "moment", "air", "teacher", "force", "education", "foot", "boy",
	"age", "policy", "music", "market", "sense", "nation", "plan", "college", "interest", "death",
	"experience", "effect", "use", "class", "control", "care", "field", "development", "role",
	"effort", "rate", "heart", "drug", "show", "leader", "light", "voice", "wife", "police", "mind",
	"price", "report", "decision", "son", "view", "relationship", "town", "road", "arm", "difference",
	"value", "building", "action", "model", "season", "society", "tax", "director", "position",
	"player", "record", "paper", "space", "ground", "form", "event", "official", "matter", "center",
	"couple", "site", "project", "activity", "star", "table", "need", "court", "oil", "situation",
	"cost", "industry", "figure", "street", "image", "phone", "data", "picture", "practice", "piece",
	"land", "product", "doctor", "wall", "patient", "worker", "news", "test", "movie", "north",
	"love", "support", "technology", "step", "baby", "computer", "type", "attention", "film", "tree",
	"source", "organization", "hair", "window", "evidence", "population", "plant", "ball", "energy",
}
