import './base.css';
import './activity.css';
