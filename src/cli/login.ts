import { hostname } from 'node:os';
import type { Command } from 'commander';
import { PosthornClient } from '../sdk/client.ts';
import {
  apiUrlOf,
  CliError,
  type Common,
  openBrowser,
  print,
  run,
  sayServer,
  withCommon,
} from './command-io.ts';
import { saveProfile } from './credentials.ts';
import { chooseProjectAfterLogin } from './projects.ts';

/**
 * `posthorn login`: pairs through the browser. The server is the one named by `--api-url` (or
 * POSTHORN_API_URL, or the profile's), else the one running on this machine (local-server.ts); the
 * command says which.
 */
export function registerLogin(program: Command) {
  withCommon(
    program
      .command('login')
      .description('log in through the browser: check the code, sign in (or sign up) and choose the scope')
      .option('--no-browser', 'print the URL instead of opening a browser'),
  ).action(
    run(async (opts: Common & { browser: boolean }) => {
      sayServer(opts);
      const client = new PosthornClient({ baseUrl: apiUrlOf(opts) });
      const pairing = await client.startPairing(hostname());
      process.stderr.write(
        `Your code: ${pairing.code}\nOpen ${pairing.verification_url} and check that it shows the same code.\n`,
      );
      if (opts.browser) openBrowser(pairing.verification_url);
      const deadline = new Date(pairing.expires_at).getTime();
      const spinner = ['|', '/', '-', '\\'];
      for (let i = 0; ; i++) {
        if (process.stderr.isTTY)
          process.stderr.write(`\r${spinner[i % 4]} waiting for you to authorise in the browser...`);
        await new Promise((r) => setTimeout(r, Math.max(1, pairing.interval) * 1000));
        const state = await client.pollPairing(pairing.poll_token);
        if (state.status === 'pending' && Date.now() < deadline) continue;
        if (process.stderr.isTTY) process.stderr.write('\n');
        if (state.status !== 'authorized' || !state.key) {
          throw new CliError(
            `the pairing was ${state.status === 'pending' ? 'not authorised in time' : state.status}: run \`posthorn login\` again`,
          );
        }
        const project = await chooseProjectAfterLogin(opts, state.key);
        const file = saveProfile(opts.profile, {
          api_url: apiUrlOf(opts),
          api_key: state.key,
          ...(state.key_id ? { key_id: state.key_id } : {}),
          ...(project ? { project_id: project } : {}),
        });
        print(
          opts,
          { logged_in: true, credentials_file: file, project_id: project ?? null },
          () =>
            `Logged in: the key is saved in ${file} (profile "${opts.profile}")${project ? `; commands act in project ${project}` : ''}.`,
        );
        return;
      }
    }),
  );
}
