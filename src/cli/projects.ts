import type { Command } from 'commander';
import { ApiError, PosthornClient, type ProjectSummary } from '../sdk/client.ts';
import {
  apiUrlOf,
  ask,
  CliError,
  type Common,
  clientOf,
  print,
  projectChoice,
  run,
  table,
  withCommon,
} from './command-io.ts';
import { credentialsPath, loadProfile, saveProfile } from './credentials.ts';

/**
 * Which project the CLI acts in (issue 47, item 5): an all-access key reaches every project its
 * user administers, and the project API asks which (`X-Project-Id`) once there are several. The
 * choice: `--project`, POSTHORN_PROJECT, or the profile's remembered project, chosen after
 * `posthorn login` and `signup` and changed with `posthorn projects use`.
 */

/** The projects an all-access key acts in (Owner or Admin); null for a project key (one project). */
async function projectsOfKey(client: PosthornClient): Promise<ProjectSummary[] | null> {
  try {
    const { data } = await client.projects();
    return data.filter((p) => p.role === 'owner' || p.role === 'admin');
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) return null;
    throw err;
  }
}

/**
 * After `posthorn login`: the project to remember with the new key. `--project` if given (it must
 * be one the key reaches), the only one there is, or in a terminal the person's pick; none for a
 * project key, or with several projects and nobody to ask (the command says how to choose).
 */
export async function chooseProjectAfterLogin(opts: Common, apiKey: string): Promise<string | undefined> {
  const projects = await projectsOfKey(new PosthornClient({ baseUrl: apiUrlOf(opts), apiKey }));
  if (projects === null) return undefined;
  const wanted = opts.project || process.env.POSTHORN_PROJECT;
  if (wanted) {
    if (!projects.some((p) => p.id === wanted))
      throw new CliError(`this key does not act in project ${wanted}: see \`posthorn projects list\``);
    return wanted;
  }
  if (projects.length === 1) return projects[0].id;
  if (projects.length === 0 || process.stdin.isTTY !== true) {
    process.stderr.write(
      `This key acts in ${projects.length} projects: choose one with \`posthorn projects use <id>\` (see \`posthorn projects list\`), --project or POSTHORN_PROJECT.\n`,
    );
    return undefined;
  }
  process.stderr.write(`${projects.map((p, i) => `  ${i + 1}. ${p.name} (${p.id})`).join('\n')}\n`);
  const answer = await ask(`Project to act in [1-${projects.length}, default 1]: `);
  const index = answer === '' ? 0 : Number(answer) - 1;
  if (!Number.isInteger(index) || !projects[index]) throw new CliError(`no project numbered "${answer}"`);
  return projects[index].id;
}

export function registerProjectCommands(program: Command) {
  const projects = program.command('projects').description('the projects a key acts in (all-access key)');
  withCommon(
    projects.command('list').description('your projects, with your role; * marks the one commands act in'),
  ).action(
    run(async (opts: Common) => {
      const result = await clientOf(opts).projects();
      const current = projectChoice(opts)?.id;
      print(opts, { ...result, current: current ?? null }, () =>
        table([
          ['', 'ID', 'NAME', 'ROLE'],
          ...result.data.map((p) => [p.id === current ? '*' : '', p.id, p.name, p.role ?? '']),
        ]),
      );
    }),
  );
  withCommon(
    projects
      .command('use <project_id>')
      .description("remember the project this profile's commands act in (stored with its key)"),
  ).action(
    run(async (projectId: string, opts: Common) => {
      const profile = loadProfile(opts.profile);
      if (!profile)
        throw new CliError(`no stored credential for profile "${opts.profile}" in ${credentialsPath()}`);
      // the key must act there: the server answers for the project it would act in
      const me = await new PosthornClient({
        baseUrl: apiUrlOf(opts),
        apiKey: profile.api_key,
        projectId,
      }).me();
      if (me.project.id !== projectId)
        throw new CliError(
          `this profile's key is a project key: it acts only in ${me.project.name} (${me.project.id})`,
        );
      saveProfile(opts.profile, { ...profile, project_id: projectId });
      print(
        opts,
        { project: me.project },
        () => `Commands of profile "${opts.profile}" now act in ${me.project.name} (${me.project.id}).`,
      );
    }),
  );
}
