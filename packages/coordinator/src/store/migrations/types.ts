/** The shape of one numbered, frozen migration. */
import type { Kysely } from 'kysely';

export interface Migration {
  /** Sortable, unique, e.g. "0001-initial". Recorded in gpux_migrations once applied. */
  name: string;
  up(db: Kysely<unknown>, dialect: 'sqlite' | 'postgres'): Promise<void>;
}
