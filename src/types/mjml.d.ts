// mjml ships no types; the one call Posthorn makes
declare module 'mjml' {
  interface MjmlOptions {
    validationLevel?: 'strict' | 'soft' | 'skip';
    ignoreIncludes?: boolean;
    keepComments?: boolean;
  }
  interface MjmlResult {
    html: string;
    errors: { line: number; message: string; tagName: string; formattedMessage: string }[];
  }
  export default function mjml2html(source: string, options?: MjmlOptions): Promise<MjmlResult>;
}
