import { createContext, type ReactNode, useContext, useState } from 'react';
import type { Session, SessionProject } from './api/endpoints.ts';

const STORAGE_KEY = 'posthorn.project';

interface ProjectChoice {
  project: SessionProject;
  session: Session;
  choose(projectId: string): void;
}

const ProjectContext = createContext<ProjectChoice | null>(null);

function stored(): string | null {
  try {
    return localStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

// the project chosen in this page: the one chosen last in this browser when the page opened
let chosen = stored();

/** Makes a project the one the next signed-in page opens in (an accepted invitation's, say). */
export function rememberProject(projectId: string) {
  chosen = projectId;
  try {
    localStorage.setItem(STORAGE_KEY, projectId);
  } catch {
    // private mode: the choice lasts for this page only
  }
}

/** The project the screens act in (and their routes load for): the one chosen last, else the first. */
export function projectOf(session: Session): SessionProject | undefined {
  return session.projects.find((p) => p.id === chosen) ?? session.projects[0];
}

/** Holds the project choice for the signed-in screens. */
export function ProjectProvider({ session, children }: { session: Session; children: ReactNode }) {
  const [, setChoice] = useState(chosen);
  const project = projectOf(session);
  if (!project) return <>{children}</>;
  const choose = (projectId: string) => {
    rememberProject(projectId);
    setChoice(projectId);
  };
  return <ProjectContext.Provider value={{ project, session, choose }}>{children}</ProjectContext.Provider>;
}

/** The current project and the signed-in session; only inside the signed-in shell. */
export function useProject(): ProjectChoice {
  const choice = useContext(ProjectContext);
  if (!choice) throw new Error('useProject outside a signed-in page');
  return choice;
}

/** Owners and Admins manage keys, domains and members; Members read and send. */
export function canManage(project: SessionProject): boolean {
  return project.role === 'owner' || project.role === 'admin';
}
