/**
 * `npm run check:spam`: each built-in template starter, checked and rendered by the template engine
 * for a sample contact (as `POST /templates` with `starter` and a send would), composed as the full
 * message a recipient gets (HTML and the text part derived from it), and scored by SpamAssassin
 * offline (`spamassassin -L -t`: local tests only, no network). Prints a table and exits 1 if a
 * starter scores above 0. Needs the Debian package: `apt-get install spamassassin`.
 */
import { spawn } from 'node:child_process';
import MailComposer from 'nodemailer/lib/mail-composer';
import { checkContent } from '../src/domain/templates/content.ts';
import { renderTemplate } from '../src/domain/templates/render.ts';
import { STARTERS, type Starter } from '../src/domain/templates/starters.ts';
import { SAMPLE_CONTACT, starterValues } from '../test/helpers/starters.ts';

interface Scored {
  starter: string;
  /** As SpamAssassin prints it (one decimal). */
  score: string;
  rules: string;
}

function spamassassin(message: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('spamassassin', ['-L', '-t'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.on('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error('spamassassin is not installed: apt-get install spamassassin')
          : err,
      ),
    );
    child.on('close', (code) =>
      code === 0
        ? resolve(Buffer.concat(out).toString('utf8'))
        : reject(new Error(`spamassassin exited ${code}`)),
    );
    child.stdin.end(message);
  });
}

/** The score and rule names from the X-Spam-Status header (folded over several lines). */
function parseStatus(output: string): { score: string; rules: string } {
  const headers = output.split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, ' ');
  const status = /^X-Spam-Status: .*$/m.exec(headers)?.[0];
  const score = status ? /score=(-?\d+(?:\.\d+)?)/.exec(status)?.[1] : undefined;
  if (!status || score === undefined) throw new Error('no X-Spam-Status score in spamassassin output');
  const rules = /tests=(.*?)(?:\s+\w+=|$)/.exec(status)?.[1] ?? '';
  return {
    score,
    rules:
      rules
        .split(/[\s,]+/)
        .filter(Boolean)
        .join(', ') || 'none',
  };
}

async function scoreStarter(starter: Starter): Promise<Scored> {
  const { subject, mjml, preheader, variables } = starter;
  const content = await checkContent({ subject, mjml, preheader, variables }, 'starters');
  const rendered = renderTemplate({ cacheKey: '', ...content }, starterValues(starter), SAMPLE_CONTACT);
  const composer = new MailComposer({
    from: 'Posthorn <hello@example.com>',
    to: `${SAMPLE_CONTACT.first_name} ${SAMPLE_CONTACT.last_name} <${SAMPLE_CONTACT.email}>`,
    subject: rendered.subject,
    html: rendered.html,
    text: rendered.text,
  });
  const message = await composer.compile().build();
  return { starter: starter.key, ...parseStatus(await spamassassin(message)) };
}

const results: Scored[] = [];
for (const starter of STARTERS) results.push(await scoreStarter(starter));

const width = Math.max(...results.map((r) => r.starter.length), 'starter'.length);
console.log(`${'starter'.padEnd(width)}  score  rules`);
for (const r of results) console.log(`${r.starter.padEnd(width)}  ${r.score.padStart(5)}  ${r.rules}`);
const over = results.filter((r) => Number(r.score) > 0);
if (over.length > 0) {
  console.error(`\nabove 0: ${over.map((r) => r.starter).join(', ')}`);
  process.exitCode = 1;
}
