export interface Page<T> {
  items: T[];
  /** Opaque; pass back to get the next page. null on the last page. */
  nextCursor: string | null;
}
