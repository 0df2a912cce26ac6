import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import envPaths from 'env-paths';

export interface Profile {
  api_url: string;
  api_key: string;
  key_id?: string;
  email?: string;
  /**
   * The project this profile's key acts in (`X-Project-Id`), chosen after `posthorn login` or
   * `signup`, or with `posthorn projects use`: an all-access key reaches every project its user
   * administers, and asks which once there are several.
   */
  project_id?: string;
}

interface CredentialsFile {
  profiles: Record<string, Profile>;
}

/** The credentials file: under the user's config directory (POSTHORN_CONFIG_DIR overrides), mode 0600. */
export function credentialsPath(): string {
  const dir = process.env.POSTHORN_CONFIG_DIR || envPaths('posthorn', { suffix: '' }).config;
  return path.join(dir, 'credentials.json');
}

function read(): CredentialsFile {
  const file = credentialsPath();
  if (!existsSync(file)) return { profiles: {} };
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as CredentialsFile;
    return parsed && typeof parsed.profiles === 'object' ? parsed : { profiles: {} };
  } catch {
    throw new Error(`${file} is not valid JSON: fix or delete it`);
  }
}

export function loadProfile(name: string): Profile | undefined {
  return read().profiles[name];
}

export function saveProfile(name: string, profile: Profile): string {
  const file = credentialsPath();
  const data = read();
  data.profiles[name] = profile;
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

/** Removes a profile; the file goes when no profile is left. Returns whether there was one. */
export function removeProfile(name: string): boolean {
  const file = credentialsPath();
  const data = read();
  if (!data.profiles[name]) return false;
  delete data.profiles[name];
  if (Object.keys(data.profiles).length === 0) rmSync(file, { force: true });
  else writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  return true;
}
