package procstats

// TrackedCount is how many processes the Scraper remembers between scrapes (tests only).
func (s *Scraper) TrackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tracked)
}
