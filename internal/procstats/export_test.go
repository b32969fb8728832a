package procstats

// TrackedCount is how many processes the Scraper remembers between scrapes (tests only).
func (s *Scraper) TrackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tracked)
}

// NewHostSourceAt is the host source over a procfs tree at root (tests only).
var NewHostSourceAt = newHostSourceAt
