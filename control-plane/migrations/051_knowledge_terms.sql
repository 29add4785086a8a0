-- How many chunks of a base contain each lexeme (document frequency), kept by the ingestion transaction.
-- Retrieval uses it to pick the selective words of a question as candidates (IDF-style): a word found in
-- most chunks would make the ranking read most of the base, and says little about which chunk answers.
create table knowledge_terms (
  kb_id uuid not null references knowledge_bases (id) on delete cascade,
  lexeme text not null,
  ndoc integer not null check (ndoc >= 0),
  primary key (kb_id, lexeme)
);
