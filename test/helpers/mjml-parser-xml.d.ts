// mjml's own XML parser (a dependency of mjml), used by tests to compare MJML as parsed trees.
declare module 'mjml-parser-xml' {
  export default function parse(
    xml: string,
    options: { keepComments?: boolean; components?: unknown },
  ): { tagName: string; attributes?: Record<string, string>; children?: unknown[]; content?: string };
}
