// How a chunk reads in a prompt: where it comes from (title and heading path), then its text.
export const formatChunk = (c: { heading: string; content: string; title?: string }) => {
  const where = [c.title, c.heading].filter(Boolean).join(' › ');
  return where ? `[${where}]\n${c.content}` : c.content;
};
