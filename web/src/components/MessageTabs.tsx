import * as Tabs from '@radix-ui/react-tabs';
import type { ReactNode } from 'react';

/**
 * A message's content in tabs: preview, text, HTML source, headers and raw source. The HTML is
 * shown in a frame with `sandbox=""`: no scripts, no forms, no navigation, and an opaque origin that
 * cannot reach the dashboard's cookies or API.
 */
export function MessageTabs({
  html,
  previewTitle,
  text,
  headers,
  raw,
  first = 'preview',
}: {
  html: string | null;
  /** The preview frame's name. */
  previewTitle: string;
  text: string;
  headers: ReactNode;
  raw: ReactNode;
  /** The tab shown first when there is HTML (without HTML it is the text). */
  first?: 'preview' | 'text';
}) {
  return (
    <Tabs.Root defaultValue={html ? first : 'text'} className="tabs">
      <Tabs.List className="tab-list" aria-label="Message content">
        {html && (
          <Tabs.Trigger value="preview" className="tab">
            Preview
          </Tabs.Trigger>
        )}
        <Tabs.Trigger value="text" className="tab">
          Text
        </Tabs.Trigger>
        {html && (
          <Tabs.Trigger value="html" className="tab">
            HTML source
          </Tabs.Trigger>
        )}
        <Tabs.Trigger value="headers" className="tab">
          Headers
        </Tabs.Trigger>
        <Tabs.Trigger value="raw" className="tab">
          Raw source
        </Tabs.Trigger>
      </Tabs.List>
      {html && (
        <Tabs.Content value="preview" className="tab-panel">
          <iframe className="preview" title={previewTitle} sandbox="" srcDoc={html} />
        </Tabs.Content>
      )}
      <Tabs.Content value="text" className="tab-panel">
        <pre className="source">{text}</pre>
      </Tabs.Content>
      {html && (
        <Tabs.Content value="html" className="tab-panel">
          <pre className="source">{html}</pre>
        </Tabs.Content>
      )}
      <Tabs.Content value="headers" className="tab-panel">
        {headers}
      </Tabs.Content>
      <Tabs.Content value="raw" className="tab-panel">
        {raw}
      </Tabs.Content>
    </Tabs.Root>
  );
}
