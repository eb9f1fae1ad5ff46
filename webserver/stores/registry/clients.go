package registry

import "slices"

// clientSet is one issuer's client ids: a slice while there are few (nearly every issuer
// has one: a map for each held ~700 bytes a registration), a map beyond (an issuer such
// as Canvas cloud's has one per customer institution).
type clientSet struct {
	few  []string
	many map[string]struct{}
}

// maxFewClients is the most client ids kept in the slice.
const maxFewClients = 8

func (s clientSet) len() int { return len(s.few) + len(s.many) }

func (s clientSet) add(id string) clientSet {
	switch {
	case s.many != nil:
		s.many[id] = struct{}{}
	case slices.Contains(s.few, id):
	case len(s.few) < maxFewClients:
		s.few = append(s.few, id)
	default:
		s.many = make(map[string]struct{}, len(s.few)+1)
		for _, c := range s.few {
			s.many[c] = struct{}{}
		}
		s.many[id] = struct{}{}
		s.few = nil
	}
	return s
}

func (s clientSet) remove(id string) clientSet {
	if s.many != nil {
		delete(s.many, id)
		return s
	}
	s.few = slices.DeleteFunc(s.few, func(c string) bool { return c == id })
	return s
}

// each calls f with every client id.
func (s clientSet) each(f func(string)) {
	for _, c := range s.few {
		f(c)
	}
	for c := range s.many {
		f(c)
	}
}
