import type pg from 'pg';
import { DestinationError, OutsideWarehouseError } from '../destination-error.js';

/** The role a user's select runs as when the connection's own user could reach the server's files. */
export const READER_ROLE = 'seedline_reader';

/** Roles whose members read or write the server's files or run its programs (superusers can all three). */
const FILE_ROLES = ['pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program'];

/**
 * The role a user's select (`query`, `seeds.*.sql`) must run as, or null when the connection's
 * user may run it as itself. A read-only transaction stops writes to the warehouse, not
 * `COPY … TO '/file'` or `pg_read_file`: a superuser, or a member of a file role, runs the select
 * as {@link READER_ROLE}, a role seedline creates that reads every table (`pg_read_all_data`) and
 * nothing on the server's disk. When it cannot be made, reads are refused with what an
 * administrator runs to make it.
 */
export async function readerRoleOf(client: pg.PoolClient): Promise<string | null> {
  const { rows } = await client.query<{ super: boolean; files: boolean; user: string }>(
    `select r.rolsuper as super, current_user as user,
            ${FILE_ROLES.map((role) => `pg_has_role(current_user, '${role}', 'MEMBER')`).join(' or ')} as files
       from pg_roles r where r.rolname = current_user`,
  );
  const me = rows[0];
  if (!me || (!me.super && !me.files)) return null;
  try {
    await client.query(
      `do $$ begin
         if not exists (select 1 from pg_roles where rolname = '${READER_ROLE}') then create role ${READER_ROLE} nologin; end if;
       end $$`,
    );
    await client.query(`grant pg_read_all_data to ${READER_ROLE}`);
    if (!me.super) await client.query(`grant ${READER_ROLE} to current_user`);
  } catch (error) {
    // Another process made it at the same moment: it exists now, which is all that is needed.
    if (!(await roleExists(client)) || (!me.super && !(await isMember(client)))) throw cannotMake(me.user, error);
  }
  return READER_ROLE;
}

async function roleExists(client: pg.PoolClient): Promise<boolean> {
  const { rows } = await client.query(`select 1 from pg_roles where rolname = $1`, [READER_ROLE]);
  return rows.length > 0;
}

async function isMember(client: pg.PoolClient): Promise<boolean> {
  const { rows } = await client.query<{ member: boolean }>(`select pg_has_role(current_user, $1, 'MEMBER') as member`, [
    READER_ROLE,
  ]);
  return rows[0]?.member === true;
}

function cannotMake(user: string, cause: unknown): DestinationError {
  return new DestinationError(
    'SEEDLINE_QUERY_OUTSIDE_WAREHOUSE',
    `The Postgres user ${user} can read or write the server's files, so seedline runs a user's select as the role ${READER_ROLE}, ` +
      `which it could not create (${(cause as Error).message}). Ask an administrator to run: create role ${READER_ROLE} nologin; ` +
      `grant pg_read_all_data to ${READER_ROLE}; grant ${READER_ROLE} to ${user};`,
    { cause },
  );
}

/** A refusal of the reader role (42501 insufficient_privilege): the select reached for a file or a program. */
export function outsideWarehouseOf(error: unknown): OutsideWarehouseError | undefined {
  const { code, message } = error as { code?: string; message?: string };
  return code === '42501' ? new OutsideWarehouseError(message ?? 'a right reads do not have') : undefined;
}
